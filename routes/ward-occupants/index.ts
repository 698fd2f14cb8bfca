import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WARD_OCCUPANT_FIELDS } from '../../db/repositories/ward-occupants.js'
import { listParameters } from '../../http/list-parameters.js'
import { ifMatchOf, sendJson, withEtag } from '../../http/reply.js'
import { facilityForCreate } from '../../plugins/auth/index.js'
import { errorResponses, IdParams, ListEnvelope, ListQueryString, listItem } from '../../schemas/common.js'
import { WardOccupant, WardOccupantCreate, WardOccupantPatch } from '../../schemas/ward-occupants.js'
import { answerRemoved, answerVersioned, sendPage } from '../answers.js'

const tags = ['ward occupants']

/** Which patient occupies which bed, for which encounter, and when they were discharged. */
const wardOccupantRoutes: FastifyPluginAsyncTypebox = async function wardOccupantRoutes(fastify) {
  const occupants = fastify.repos.wardOccupants

  fastify.post(
    '/ward-occupants',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'admit: record that an account occupies a bed',
        body: WardOccupantCreate,
        response: { 200: WardOccupant, ...errorResponses(409, 413, 415) },
      },
    },
    async function createWardOccupant(request, reply) {
      const facility = facilityForCreate(request.principal, request.body.facility)
      return answerVersioned(request, reply, () => occupants.create(request.principal, facility, request.body))
    },
  )

  fastify.get(
    '/ward-occupants',
    {
      config: { readAudit: 'list', listParameters: listParameters(WARD_OCCUPANT_FIELDS, WardOccupant) },
      schema: {
        tags,
        summary: 'list ward occupants (Feathers-style filters, e.g. dischargedAt=null for active beds)',
        querystring: ListQueryString,
        response: { 200: ListEnvelope('wardOccupants', listItem(WardOccupant)), ...errorResponses() },
      },
    },
    async function listWardOccupants(request, reply) {
      // SQLite wrote the records' JSON with exactly the schema's fields; the envelope is added here.
      return sendPage(request, reply, 'wardOccupants', occupants.list(request.principal, request.query))
    },
  )

  fastify.get(
    '/ward-occupants/:id',
    {
      config: { readAudit: 'get' },
      schema: {
        tags,
        summary: 'get one ward occupant (with its ETag)',
        params: IdParams,
        response: { 200: WardOccupant, ...errorResponses(404) },
      },
    },
    async function getWardOccupant(request, reply) {
      return sendJson(reply, withEtag(reply, occupants.get(request.principal, request.params.id)))
    },
  )

  fastify.patch(
    '/ward-occupants/:id',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'change the provider, discharge (discharge: true) or re-open (discharge: false)',
        params: IdParams,
        body: WardOccupantPatch,
        response: { 200: WardOccupant, ...errorResponses(404, 409, 412, 413, 415) },
      },
    },
    async function patchWardOccupant(request, reply) {
      return answerVersioned(request, reply, () =>
        occupants.patch(request.principal, request.params.id, request.body, ifMatchOf(request)),
      )
    },
  )

  fastify.delete(
    '/ward-occupants/:id',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'delete a ward occupant record and return it (If-Match honoured)',
        params: IdParams,
        response: { 200: WardOccupant, ...errorResponses(404, 412) },
      },
    },
    async function deleteWardOccupant(request, reply) {
      return answerRemoved(request, reply, () =>
        occupants.remove(request.principal, request.params.id, ifMatchOf(request)),
      )
    },
  )
}

export default wardOccupantRoutes
