import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { fieldsFor } from '../../db/repositories/notification-audience.js'
import type { NotificationRepository } from '../../db/repositories/notifications.js'
import { listParameters } from '../../http/list-parameters.js'
import { withEtag } from '../../http/reply.js'
import { noteListTotal } from '../../plugins/read-audit.js'
import { errorResponses, IdParams, ListEnvelope, listItem, NoBody } from '../../schemas/common.js'
import { Notification, NotificationListQuery, UnseenCount } from '../../schemas/notifications.js'
import { answerVersioned, pageOf, sendPage } from '../answers.js'

/** Every field an admin may filter on (`to` is admin-only), plus $unseen. */
const NOTIFICATION_PARAMETERS = listParameters(
  fieldsFor({ account: '', facility: null, role: 'admin' }),
  Notification,
  { $unseen: NotificationListQuery.properties.$unseen },
)

type NotificationRecord = ReturnType<NotificationRepository['get']>

/**
 * A notification changes only by gaining readers (`seenBy` only grows), so their count is its
 * version. It is the count of the readers this caller may learn of (the `seenBy` it gets), so the
 * ETag changes exactly when the caller's view changes, and never tells how many readers of other
 * facilities there are.
 */
function versioned(record: NotificationRecord) {
  return { record, version: 1 + record.seenBy.length }
}

const tags = ['notifications']

/**
 * Notifications addressed to the caller: read them, count the unseen ones, mark one seen.
 * They are created by the service's own events and by `facility-service notify`, never over HTTP.
 */
const notificationRoutes: FastifyPluginAsyncTypebox = async function notificationRoutes(fastify) {
  const notifications = fastify.repos.notifications

  fastify.get(
    '/notifications',
    {
      config: { readAudit: 'list', listParameters: NOTIFICATION_PARAMETERS },
      schema: {
        tags,
        summary: "list the caller's notifications ($unseen=true for the unread ones)",
        querystring: NotificationListQuery,
        response: { 200: ListEnvelope('notifications', listItem(Notification)), ...errorResponses() },
      },
    },
    async function listNotifications(request, reply) {
      // The common case (an inbox page, whole records) comes as JSON text written by SQLite.
      const text = notifications.listJson(request.principal, request.query)
      if (text) return sendPage(request, reply, 'notifications', text)
      return pageOf(request, 'notifications', notifications.list(request.principal, request.query))
    },
  )

  fastify.get(
    '/notifications/unseen-count',
    {
      config: { readAudit: 'list', listParameters: NOTIFICATION_PARAMETERS },
      schema: {
        tags,
        summary: 'how many of the notifications matching the filters the caller has not seen (extension)',
        querystring: NotificationListQuery,
        response: { 200: UnseenCount, ...errorResponses() },
      },
    },
    async function countUnseenNotifications(request) {
      const count = notifications.unseenCount(request.principal, request.query)
      noteListTotal(request, count)
      return { count }
    },
  )

  fastify.get(
    '/notifications/:id',
    {
      config: { readAudit: 'get' },
      schema: {
        tags,
        summary: 'get one notification the caller may see',
        params: IdParams,
        response: { 200: Notification, ...errorResponses(404) },
      },
    },
    async function getNotification(request, reply) {
      return withEtag(reply, versioned(notifications.get(request.principal, request.params.id)))
    },
  )

  fastify.post(
    '/notifications/:id/seen',
    {
      // Seen state is the reader's own, so a read token may set it. The answer shows the text and a
      // mark writes no audit entry (it changes only the reader's own state): always a read.
      config: { role: 'read', readAudit: 'get' },
      schema: {
        tags,
        summary: 'add the caller to seenBy (idempotent; extension)',
        params: IdParams,
        body: NoBody,
        response: { 200: Notification, ...errorResponses(404) },
      },
    },
    async function markNotificationSeen(request, reply) {
      return answerVersioned(
        request,
        reply,
        () => notifications.markSeen(request.principal, request.params.id),
        versioned,
      )
    },
  )
}

export default notificationRoutes
