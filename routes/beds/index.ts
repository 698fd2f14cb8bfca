import createError from '@fastify/error'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Principal } from '../../domain/principal.js'
import { facilityForCreate } from '../../plugins/auth/index.js'
import { answerWrite } from '../../plugins/idempotency.js'
import { noteListTotal } from '../../plugins/read-audit.js'
import { BedList, BedParams, BedStateBody, BedStatus, BedsQuery } from '../../schemas/beds.js'
import { errorResponses } from '../../schemas/common.js'

const OtherFacilityError = createError(
  'FACILITY_FORBIDDEN',
  'this token is bound to facility %s and cannot read the beds of facility %s',
  403,
)

/** The facility whose beds a caller asks for; a token bound to one facility reads only that one. */
function facilityToList(principal: Principal, requested: string | undefined): string | null {
  if (principal.facility === null) return requested ?? null
  if (requested !== undefined && requested !== principal.facility) {
    throw new OtherFacilityError(principal.facility, requested)
  }
  return principal.facility
}

/**
 * The beds of a facility for the bed board (docs/BOARD.md): every bed its occupants ever had, with
 * who is in it now, who left it last and its state; and the housekeeping state staff set.
 */
const bedRoutes: FastifyPluginAsyncTypebox = async function bedRoutes(fastify) {
  const beds = fastify.repos.beds

  fastify.get(
    '/beds',
    {
      // The beds carry their occupants (occupiedBy names the patient): a read like any list.
      config: { readAudit: 'list' },
      schema: {
        tags: ['beds'],
        summary:
          'the beds of a facility (every bed an occupant ever had), each with its occupants now and its last discharge',
        querystring: BedsQuery,
        response: { 200: BedList, ...errorResponses() },
      },
    },
    async function listBeds(request) {
      const facility = facilityToList(request.principal, request.query.facility)
      const list = beds.list(facility)
      noteListTotal(request, list.length)
      return { ...(facility === null ? {} : { facility }), beds: list, total: list.length }
    },
  )

  fastify.put(
    '/beds/:bed/state',
    {
      config: { readAudit: 'write' },
      schema: {
        tags: ['beds'],
        summary:
          "sets a bed's housekeeping state (cleaning, closed, contaminated, isolated) or clears it (null); audited and on the live feed",
        description:
          'A bed closed, being cleaned or contaminated is not free for an admission over the API (409 BED_NOT_AVAILABLE); ' +
          'the ADT feed admits into it anyway and notifies the ward. The `write` role may set it (ward staff report a bed ' +
          'cleaned), facility-scoped as every write. The bed must be known: occupied once, listed, or expected.',
        params: BedParams,
        querystring: BedsQuery,
        body: BedStateBody,
        response: { 200: BedStatus, ...errorResponses(404) },
      },
    },
    async function setBedState(request, reply) {
      const facility = facilityForCreate(request.principal, request.query.facility)
      const { state, note } = request.body
      return answerWrite(
        request,
        reply,
        () =>
          fastify.repos.bedStates.setHousekeeping(request.principal, facility, request.params.bed, state, note ?? null),
        (status) => status,
      )
    },
  )
}

export default bedRoutes
