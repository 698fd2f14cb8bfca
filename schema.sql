-- The database schema, as an ordered list of migrations. Each section starts with a line
-- "-- migration N: title" and runs once, in one transaction, when PRAGMA user_version < N.
-- Never edit a migration that has shipped: add a new one below.

-- migration 1: access tokens and the audit log
CREATE TABLE tokens (
  id          TEXT PRIMARY KEY,
  secret_hash BLOB NOT NULL,            -- sha256 of the secret part; the secret is never stored
  account     TEXT NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
  facility    TEXT,                      -- NULL: works across facilities
  label       TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER,
  revoked_at  INTEGER
) STRICT;

CREATE TABLE audit_log (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  at         INTEGER NOT NULL,
  account    TEXT NOT NULL,
  token_id   TEXT,
  facility   TEXT,
  resource   TEXT NOT NULL,
  record_id  TEXT NOT NULL,
  operation  TEXT NOT NULL CHECK (operation IN ('create', 'patch', 'delete')),
  before     TEXT,                       -- JSON of the record before the change (NULL on create)
  after      TEXT                        -- JSON of the record after the change (NULL on delete)
) STRICT;
CREATE INDEX audit_log_record ON audit_log (resource, record_id);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

-- migration 2: ward occupants
CREATE TABLE ward_occupants (
  id            TEXT PRIMARY KEY,
  version       INTEGER NOT NULL DEFAULT 1,
  created_at    INTEGER NOT NULL,
  created_by    TEXT NOT NULL,
  facility      TEXT,
  encounter     TEXT NOT NULL,
  room          TEXT,
  bed           TEXT NOT NULL,
  provider      TEXT,
  occupied_at   INTEGER NOT NULL,
  occupied_by   TEXT NOT NULL,
  discharged_at INTEGER,
  discharged_by TEXT
) STRICT;
-- The one-active-occupant-per-bed index (ward_occupants_active_bed) is created or dropped at
-- start according to BED_POLICY, see db/bed-policy.ts.
-- Each index serves a lookup docs/API.md recommends; test/db/query-plans.test.ts checks them.
-- The bed index starts with the bed, so a bed is found with or without a facility; occupied_at
-- next answers "who was in this bed in November" and a bed's history newest first from the index,
-- and discharged_at last finds a bed's active occupant without reading its discharged ones.
-- The active index holds only the occupants still in a bed (a few hundred per facility however
-- long the history grows), and all their columns: the ward's main screen (`dischargedAt=null`,
-- an equality on its second column, in the default order) reads it alone, no table rows.
CREATE INDEX ward_occupants_bed ON ward_occupants (bed, facility, occupied_at, discharged_at);
CREATE INDEX ward_occupants_facility_created ON ward_occupants (facility, created_at, id);
CREATE INDEX ward_occupants_created ON ward_occupants (created_at, id);
CREATE INDEX ward_occupants_encounter ON ward_occupants (encounter);
CREATE INDEX ward_occupants_occupied_by ON ward_occupants (occupied_by);
CREATE INDEX ward_occupants_active ON ward_occupants (facility, discharged_at, created_at, id,
  version, created_by, encounter, room, bed, provider, occupied_at, occupied_by, discharged_by)
  WHERE discharged_at IS NULL;
-- Planner hints (see form templates below): a facility holds many occupants, a bed, an encounter or
-- an account few, and the active ones are few. Without them SQLite prefers walking a whole
-- facility in created_at order over finding a bed's 50 rows and sorting them. They describe a
-- large hospital (a million rows); a later ANALYZE replaces them with real counts, which lead to
-- the same plans.
ANALYZE ward_occupants;
DELETE FROM sqlite_stat1 WHERE tbl = 'ward_occupants'; -- ANALYZE of the empty table wrote zeros for the partial index
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ('ward_occupants', 'ward_occupants_bed', '1000000 10 5 1 1'),
  ('ward_occupants', 'ward_occupants_facility_created', '1000000 100000 1 1'),
  ('ward_occupants', 'ward_occupants_created', '1000000 1 1'),
  ('ward_occupants', 'ward_occupants_encounter', '1000000 2'),
  ('ward_occupants', 'ward_occupants_occupied_by', '1000000 10'),
  ('ward_occupants', 'ward_occupants_active', '2000 200 200 1 1 1 1 1 1 1 1 1 1 1');
ANALYZE sqlite_schema;

-- migration 3: form templates
CREATE TABLE form_templates (
  id          TEXT PRIMARY KEY,
  version     INTEGER NOT NULL DEFAULT 1,
  created_at  INTEGER NOT NULL,
  created_by  TEXT NOT NULL,
  facility    TEXT,
  type        TEXT NOT NULL,
  subtype     TEXT,
  name        TEXT,
  description TEXT,
  template    TEXT,
  items       TEXT,                      -- JSON array
  tags        TEXT,                      -- JSON array, mirrored in form_template_tags for lookups
  meta        TEXT,                      -- JSON object
  config      TEXT,                      -- JSON object
  hidden_at   INTEGER,
  hidden_by   TEXT
) STRICT;
CREATE TABLE form_template_tags (
  tag         TEXT NOT NULL,
  template_id TEXT NOT NULL REFERENCES form_templates (id) ON DELETE CASCADE,
  PRIMARY KEY (tag, template_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX form_template_tags_template ON form_template_tags (template_id);
CREATE INDEX form_templates_facility_created ON form_templates (facility, created_at, id);
CREATE INDEX form_templates_created ON form_templates (created_at, id);
CREATE INDEX form_templates_type ON form_templates (type, subtype);
-- Planner hints (SQLite's documented manual control through sqlite_stat1): a facility or a type
-- holds many templates, a tag few. Without them, a list filtered by tag and facility (or type)
-- walks the whole facility (or type) index instead of starting from the tag. A later ANALYZE
-- replaces them with real counts.
ANALYZE form_templates;
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ('form_templates', 'form_templates_facility_created', '100000 10000 2 1'),
  ('form_templates', 'form_templates_type', '100000 2000 500'),
  ('form_template_tags', 'sqlite_autoindex_form_template_tags_1', '300000 30 1');
ANALYZE sqlite_schema;

-- migration 4: notifications, their addressees and who has seen them
-- A notification belongs to one facility or to all (facility NULL) and is addressed either to
-- everyone there (broadcast = 1) or only to the accounts in notification_recipients. The JSON
-- columns recipients and seen_by serve the records; the side tables serve the lookups, so
-- listing one account's notifications is an index search, never a scan.
CREATE TABLE notifications (
  id         TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  facility   TEXT,                       -- NULL: every facility
  code       TEXT NOT NULL,
  type       TEXT NOT NULL,
  title      TEXT NOT NULL,
  body       TEXT NOT NULL,
  meta       TEXT,                       -- JSON object
  direction  TEXT CHECK (direction IN ('inbound', 'outbound')),
  broadcast  INTEGER NOT NULL CHECK (broadcast IN (0, 1)),  -- 1: everyone of the facility
  recipients TEXT,                       -- JSON array of account uids, mirrored in notification_recipients
  seen_by    TEXT NOT NULL DEFAULT '[]', -- JSON array of account uids, mirrored in notification_seen
  CHECK ((broadcast = 1) = (recipients IS NULL))
) STRICT;
CREATE TABLE notification_recipients (
  account         TEXT NOT NULL,
  notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  PRIMARY KEY (account, notification_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX notification_recipients_notification ON notification_recipients (notification_id);
CREATE TABLE notification_seen (
  notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  account         TEXT NOT NULL,
  seen_at         INTEGER NOT NULL,
  PRIMARY KEY (notification_id, account)
) STRICT, WITHOUT ROWID;
CREATE INDEX notification_seen_account ON notification_seen (account, notification_id);
CREATE INDEX notifications_broadcast ON notifications (broadcast, facility, created_at, id);
CREATE INDEX notifications_facility_created ON notifications (facility, created_at, id);
CREATE INDEX notifications_created ON notifications (created_at, id);

-- migration 5: indexes for the list filters the docs recommend to callers without a facility
-- Without them an admin (or a facility-less account) counting the visible form templates, or
-- filtering notifications by type or code, reads the whole table. Each index starts with the
-- equality (`hidden_at IS NULL` is one), then the default order, so the count reads the index
-- alone and the page needs no sort. (A partial index on the visible templates is ignored by the
-- planner for the count once ANALYZE has run.) The hints tell a fresh database that a type or a code
-- holds a share of the notifications, not most of them, and that most templates are visible (so a
-- tag, not visibility, starts a tag lookup); ANALYZE replaces them with real counts.
CREATE INDEX form_templates_visible ON form_templates (hidden_at, created_at, id);
CREATE INDEX notifications_type ON notifications (type, created_at, id);
CREATE INDEX notifications_code ON notifications (code, created_at, id);
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ('form_templates', 'form_templates_visible', '100000 90000 1 1'),
  ('notifications', 'notifications_type', '100000 20000 1 1'),
  ('notifications', 'notifications_code', '100000 10000 1 1');
ANALYZE sqlite_schema;

-- migration 6: notifications of facility-less records, and the facility of each reader
-- A ward occupant without a facility is visible only to tokens without one, so the notifications
-- it produces must be too: unbound_only = 1 marks them (facility NULL, but not "every facility").
-- The audience index gains the column, as an equality before the facility, so every branch of a
-- facility-bound viewer (`broadcast = 1 AND unbound_only = 0 AND facility ...`) stays an index
-- search in created_at order, and its count reads the index alone; it replaces
-- notifications_broadcast.
ALTER TABLE notifications ADD COLUMN unbound_only INTEGER NOT NULL DEFAULT 0
  CHECK (unbound_only IN (0, 1) AND (unbound_only = 0 OR facility IS NULL));
-- The notifications facility-less occupants produced before this migration get the mark too: the
-- service's own ward notifications (type 'ward' with a wardOccupantId) are the only ones without
-- a facility that name a record; an occupant with a facility gave its notification that facility.
UPDATE notifications SET unbound_only = 1
WHERE facility IS NULL AND type = 'ward' AND json_extract(meta, '$.wardOccupantId') IS NOT NULL;
DROP INDEX notifications_broadcast;
CREATE INDEX notifications_audience ON notifications (broadcast, unbound_only, facility, created_at, id);
-- The facility of the token that marked a notification seen (NULL: a token without one). A
-- facility-bound caller learns only of the readers of its own facility (docs/notifications.md).
-- Marks made before this migration get the facility of their account's tokens when every token
-- that account ever had is bound to the same one (tokens are revoked, never deleted, so the mark
-- was made with one of them); otherwise they stay NULL and only callers without a facility see them.
-- (Each account's facility is worked out once, in one pass over the tokens, and joined in: a
-- subquery per mark would scan the tokens once per mark, as tokens has no index on account.)
ALTER TABLE notification_seen ADD COLUMN facility TEXT;
UPDATE notification_seen SET facility = one.facility
FROM (
  SELECT account, max(facility) AS facility FROM tokens GROUP BY account
  HAVING count(*) = count(facility) AND count(DISTINCT facility) = 1
) AS one
WHERE one.account = notification_seen.account;

-- migration 7: the live feed's log of changes
-- One row per committed change a client may be told of (GET /events), written in the change's own
-- transaction, so a change and its event commit or roll back together. seq is the event id clients
-- resume from: AUTOINCREMENT never hands out a number twice once committed, and SQLite's single
-- writer commits the numbers in order. payload is the record as of the change (the record as it was
-- for a removal), plus for notifications what decides who may read it. Unlike the audit log this
-- is pruned (FEED_RETENTION_HOURS); feed_state remembers up to which seq, so a client resuming
-- from before that is told to reload (a `reset` event) instead of silently missing changes.
CREATE TABLE feed_events (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  at        INTEGER NOT NULL,
  resource  TEXT NOT NULL CHECK (resource IN ('ward-occupants', 'form-templates', 'notifications')),
  action    TEXT NOT NULL CHECK (action IN ('created', 'patched', 'removed')),
  record_id TEXT NOT NULL,
  facility  TEXT,
  payload   TEXT NOT NULL
) STRICT;
CREATE INDEX feed_events_at ON feed_events (at);
CREATE TABLE feed_state (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_through INTEGER NOT NULL
) STRICT;
INSERT INTO feed_state (id, pruned_through) VALUES (1, 0);

-- migration 8: the read log (AUDIT_READS=true)
-- Who read what, kept apart from audit_log, which stays the append-only record of changes. One row
-- per read request: the reading token, its facility (a facility-bound admin sees its own
-- facility's rows), the route, and either the record read (record_id) or, for a list, the names of
-- its filters (JSON array, never their values) and how many records matched. Rows are written
-- after the answer, in the next group commit, and pruned after AUDIT_READS_RETENTION_DAYS; they
-- are never changed.
CREATE TABLE read_log (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  at         INTEGER NOT NULL,
  account    TEXT NOT NULL,
  token_id   TEXT NOT NULL,
  facility   TEXT,
  resource   TEXT NOT NULL,
  operation  TEXT NOT NULL CHECK (operation IN ('get', 'list', 'render')),
  route      TEXT NOT NULL,
  status     INTEGER NOT NULL,
  record_id  TEXT,
  filters    TEXT,
  total      INTEGER
) STRICT;
CREATE INDEX read_log_record ON read_log (record_id) WHERE record_id IS NOT NULL;
CREATE INDEX read_log_at ON read_log (at);
CREATE INDEX read_log_facility ON read_log (facility, seq);
CREATE TRIGGER read_log_no_update BEFORE UPDATE ON read_log
BEGIN SELECT RAISE(ABORT, 'read_log is append-only'); END;

-- migration 9: idempotency keys (the Idempotency-Key request header)
-- The final answer to a POST, PATCH or DELETE sent with an Idempotency-Key, per token, so a client
-- that lost the connection can retry and get that answer instead of making the change twice. A 2xx
-- answer is written in the transaction of the change itself, so a change is never stored without
-- its answer (a crash between the commit and the reply included). fingerprint is a SHA-256 of the
-- method, the path and the body (as parsed JSON, keys sorted): the same key with another request is
-- refused. Rows older than IDEMPOTENCY_KEY_TTL_HOURS are ignored and deleted every hour.
CREATE TABLE idempotency_keys (
  token_id    TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  status      INTEGER NOT NULL,
  headers     TEXT NOT NULL,
  body        TEXT NOT NULL,
  PRIMARY KEY (token_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
-- migration 10: the beds of a facility, for the bed board
-- GET /beds lists every bed a facility's occupants ever had. seen_beds keeps each (facility, bed)
-- once, filled from the history here and by a trigger on every admission after, so the list is
-- one key search however long the history; an index over ward_occupants (facility, bed) would do
-- the same but compete with ward_occupants_bed for the bed lookups the API documents.
-- Beds that were never occupied are known only if an administrator lists them
-- (`facility-service beds add`): kept_beds. In both, facility '' stands for the records without
-- one (facility ids are never empty), so the key has no NULL in it.
CREATE TABLE seen_beds (
  facility TEXT NOT NULL,
  bed      TEXT NOT NULL,
  PRIMARY KEY (facility, bed)
) STRICT, WITHOUT ROWID;
INSERT OR IGNORE INTO seen_beds (facility, bed) SELECT coalesce(facility, ''), bed FROM ward_occupants;
CREATE TRIGGER ward_occupants_seen_bed AFTER INSERT ON ward_occupants
BEGIN INSERT OR IGNORE INTO seen_beds (facility, bed) VALUES (coalesce(NEW.facility, ''), NEW.bed); END;
CREATE TABLE kept_beds (
  facility   TEXT NOT NULL,
  bed        TEXT NOT NULL,
  room       TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (facility, bed)
) STRICT, WITHOUT ROWID;
-- migration 11: inboxes and counters, so a page and a count of one's notifications cost the same at any size
-- A viewer's notifications are the union of a few disjoint audiences (docs/notifications.md): its
-- facility's broadcasts, every facility's, and those addressed to its account there (a viewer
-- without a facility: every broadcast, and every one addressed to it). Each audience is one range
-- of an index in created_at order, so a page walks only its first rows:
-- - broadcasts: notifications_audience (migration 6) per facility, and notifications_broadcast_created
--   for all of them at once;
-- - addressed: each addressee row carries its notification's created_at, facility and unbound_only
--   (they never change: a trigger below refuses it), indexed by account and audience, and by
--   account alone.
-- The totals are counters kept by triggers in the same transaction as the row they count: one per
-- audience (broadcast, account, scope), and per account the marks it made in each audience, so
-- "how many can I see" and "how many have I not seen" are a handful of primary key lookups.
-- scope is json_array(unbound_only, facility): '[0,"A"]', '[0,null]' (every facility) or
-- '[1,null]' (only callers without a facility), one unambiguous text for a nullable pair.
ALTER TABLE notification_recipients ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_recipients ADD COLUMN facility TEXT;
ALTER TABLE notification_recipients ADD COLUMN unbound_only INTEGER NOT NULL DEFAULT 0;
UPDATE notification_recipients
SET created_at = n.created_at, facility = n.facility, unbound_only = n.unbound_only
FROM notifications n WHERE n.id = notification_recipients.notification_id;
CREATE INDEX notification_recipients_inbox
  ON notification_recipients (account, unbound_only, facility, created_at, notification_id);
CREATE INDEX notification_recipients_account_created ON notification_recipients (account, created_at, notification_id);
CREATE INDEX notifications_broadcast_created ON notifications (broadcast, created_at, id);

CREATE TABLE notification_audience_counts (
  broadcast INTEGER NOT NULL,            -- 1: to everyone of the scope; 0: to account
  account   TEXT NOT NULL,               -- '' for broadcasts
  scope     TEXT NOT NULL,               -- json_array(unbound_only, facility)
  total     INTEGER NOT NULL,
  PRIMARY KEY (broadcast, account, scope)
) STRICT, WITHOUT ROWID;
CREATE TABLE notification_seen_counts (
  account   TEXT NOT NULL,               -- who marked
  broadcast INTEGER NOT NULL,            -- 0: marks on notifications addressed to this account
  scope     TEXT NOT NULL,
  seen      INTEGER NOT NULL,
  PRIMARY KEY (account, broadcast, scope)
) STRICT, WITHOUT ROWID;
INSERT INTO notification_audience_counts (broadcast, account, scope, total)
SELECT 1, '', json_array(unbound_only, facility), count(*) FROM notifications WHERE broadcast = 1
GROUP BY unbound_only, facility;
INSERT INTO notification_audience_counts (broadcast, account, scope, total)
SELECT 0, account, json_array(unbound_only, facility), count(*) FROM notification_recipients
GROUP BY account, unbound_only, facility;
-- A mark counts in an audience its account belongs to: any broadcast, or one addressed to it.
INSERT INTO notification_seen_counts (account, broadcast, scope, seen)
SELECT s.account, n.broadcast, json_array(n.unbound_only, n.facility), count(*)
FROM notification_seen s JOIN notifications n ON n.id = s.notification_id
WHERE n.broadcast = 1 OR EXISTS (
  SELECT 1 FROM notification_recipients r WHERE r.account = s.account AND r.notification_id = s.notification_id)
GROUP BY s.account, n.broadcast, n.unbound_only, n.facility;

CREATE TRIGGER notifications_counted AFTER INSERT ON notifications WHEN NEW.broadcast = 1
BEGIN
  INSERT INTO notification_audience_counts (broadcast, account, scope, total)
  VALUES (1, '', json_array(NEW.unbound_only, NEW.facility), 1)
  ON CONFLICT DO UPDATE SET total = total + 1;
END;
-- Deleting a notification (nothing does today) takes its marks and addressees first, while the
-- row is still there for their triggers to find its audience.
CREATE TRIGGER notifications_uncounted_children BEFORE DELETE ON notifications
BEGIN
  DELETE FROM notification_seen WHERE notification_id = OLD.id;
  DELETE FROM notification_recipients WHERE notification_id = OLD.id;
END;
CREATE TRIGGER notifications_uncounted AFTER DELETE ON notifications WHEN OLD.broadcast = 1
BEGIN
  UPDATE notification_audience_counts SET total = total - 1
  WHERE broadcast = 1 AND account = '' AND scope = json_array(OLD.unbound_only, OLD.facility);
END;
-- AFTER, so the table's own CHECK constraints speak first.
CREATE TRIGGER notifications_audience_fixed
AFTER UPDATE OF created_at, facility, broadcast, unbound_only ON notifications
WHEN NEW.created_at IS NOT OLD.created_at OR NEW.facility IS NOT OLD.facility
  OR NEW.broadcast IS NOT OLD.broadcast OR NEW.unbound_only IS NOT OLD.unbound_only
BEGIN SELECT RAISE(ABORT, 'the time and audience of a notification never change'); END;

CREATE TRIGGER notification_recipients_counted AFTER INSERT ON notification_recipients
BEGIN
  INSERT INTO notification_audience_counts (broadcast, account, scope, total)
  VALUES (0, NEW.account, json_array(NEW.unbound_only, NEW.facility), 1)
  ON CONFLICT DO UPDATE SET total = total + 1;
  INSERT INTO notification_seen_counts (account, broadcast, scope, seen)
  SELECT NEW.account, 0, json_array(NEW.unbound_only, NEW.facility), 1
  WHERE EXISTS (SELECT 1 FROM notification_seen s WHERE s.notification_id = NEW.notification_id AND s.account = NEW.account)
  ON CONFLICT DO UPDATE SET seen = seen + 1;
END;
CREATE TRIGGER notification_recipients_uncounted AFTER DELETE ON notification_recipients
BEGIN
  UPDATE notification_audience_counts SET total = total - 1
  WHERE broadcast = 0 AND account = OLD.account AND scope = json_array(OLD.unbound_only, OLD.facility);
  UPDATE notification_seen_counts SET seen = seen - 1
  WHERE account = OLD.account AND broadcast = 0 AND scope = json_array(OLD.unbound_only, OLD.facility)
    AND EXISTS (SELECT 1 FROM notification_seen s WHERE s.notification_id = OLD.notification_id AND s.account = OLD.account);
END;

CREATE TRIGGER notification_seen_counted AFTER INSERT ON notification_seen
BEGIN
  INSERT INTO notification_seen_counts (account, broadcast, scope, seen)
  SELECT NEW.account, n.broadcast, json_array(n.unbound_only, n.facility), 1 FROM notifications n
  WHERE n.id = NEW.notification_id AND (n.broadcast = 1 OR EXISTS (
    SELECT 1 FROM notification_recipients r WHERE r.account = NEW.account AND r.notification_id = NEW.notification_id))
  ON CONFLICT DO UPDATE SET seen = seen + 1;
END;
CREATE TRIGGER notification_seen_uncounted AFTER DELETE ON notification_seen
BEGIN
  UPDATE notification_seen_counts SET seen = seen - 1
  WHERE account = OLD.account AND (broadcast, scope) = (
    SELECT n.broadcast, json_array(n.unbound_only, n.facility) FROM notifications n
    WHERE n.id = OLD.notification_id AND (n.broadcast = 1 OR EXISTS (
      SELECT 1 FROM notification_recipients r WHERE r.account = OLD.account AND r.notification_id = OLD.notification_id)));
END;
-- A fresh database has no statistics: tell the planner an account's addressees are few among many.
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ('notification_recipients', 'notification_recipients_inbox', '1000000 500 500 500 1 1'),
  ('notification_recipients', 'notification_recipients_account_created', '1000000 500 1 1'),
  ('notifications', 'notifications_broadcast_created', '1000000 500000 1 1');
ANALYZE sqlite_schema;

-- migration 12: records that move between facilities (a form template patched to another facility)
-- Nobody may read a facility's records from another facility, so a move is told to each side only
-- as far as it could read it (docs/EVENTS.md, "Moves"). The feed writes one event per audience:
-- audience 'bound' is for the tokens bound to the event's facility only (the old facility's
-- `removed`, the new facility's `created`), 'unbound' for the tokens without a facility only (a
-- `patched`); NULL, every other event, for everyone who may read the facility.
ALTER TABLE feed_events ADD COLUMN audience TEXT CHECK (audience IN ('bound', 'unbound'));
-- The audit entry stays one row per change, labelled with the facility the record was in before
-- (as before) and now also the one it is in after, so an admin of either side finds it and is shown
-- its own side only (routes/audit). Existing rows get theirs from the record they hold; the
-- append-only trigger is set aside for that one statement, inside this migration's transaction.
ALTER TABLE audit_log ADD COLUMN facility_after TEXT;
DROP TRIGGER audit_log_no_update;
UPDATE audit_log SET facility_after = CASE WHEN after IS NULL THEN facility ELSE after ->> '$.facility' END;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
-- Moves written before this version were single events labelled with the old facility that carried
-- the new record: they are dropped from the kept log as if pruned, so a client resuming from before
-- them gets `reset` and reloads instead of replaying them (the audit keeps every change).
UPDATE feed_state SET pruned_through = max(pruned_through, coalesce((
  SELECT max(seq) FROM feed_events
  WHERE resource = 'form-templates' AND action = 'patched' AND (payload ->> '$.facility') IS NOT facility), 0))
WHERE id = 1;
DELETE FROM feed_events WHERE seq <= (SELECT pruned_through FROM feed_state WHERE id = 1);

-- migration 13: the ADT feed's message log (hl7/, docs/ADT.md)
-- Every HL7 message the listener answered: who sent it, what it was, what it did and the ACK it got,
-- so a resend of the same message (same MSH-3, MSH-4, MSH-10) gets the same ACK and changes nothing,
-- also across a restart. The raw text is patient data: the retention scheduler clears it after
-- HL7_KEEP_DAYS (a parked message keeps it until an admin resolves it: retrying needs it).
CREATE TABLE hl7_messages (
  id                 TEXT PRIMARY KEY,
  sending_application TEXT NOT NULL,
  sending_facility   TEXT NOT NULL,
  control_id         TEXT,                   -- NULL: the message had none (unparseable; answered AR)
  message_type       TEXT,
  event              TEXT,
  facility           TEXT,                   -- the ward facility it concerns, for a bound admin's view
  encounter          TEXT,
  received_at        INTEGER NOT NULL,
  event_at           INTEGER,
  status             TEXT NOT NULL CHECK (status IN ('applied', 'ignored', 'parked', 'rejected', 'dismissed')),
  ack_code           TEXT NOT NULL CHECK (ack_code IN ('AA', 'AR')),
  ack                TEXT NOT NULL,
  error_field        TEXT,
  error              TEXT,
  park_code          TEXT,
  raw                TEXT,
  resolved_at        INTEGER,
  resolved_by        TEXT,
  UNIQUE (sending_application, sending_facility, control_id)
) STRICT;
CREATE INDEX hl7_messages_encounter_applied ON hl7_messages (encounter, event_at) WHERE status = 'applied';
CREATE INDEX hl7_messages_status ON hl7_messages (status, facility, received_at);
CREATE INDEX hl7_messages_raw_kept ON hl7_messages (received_at) WHERE raw IS NOT NULL;

-- migration 14: accounts blocked by an administrator (facility-service account block)
-- An account named here is refused at once, whatever token it presents: the hospital's provider
-- disables a leaver only for the tokens it issues next, and a service token outlives that too.
CREATE TABLE blocked_accounts (
  account TEXT PRIMARY KEY,
  blocked_at INTEGER NOT NULL,
  reason TEXT
) STRICT;

-- migration 15: the ADT log keeps what each message said: exactly-once by sender, control id and content
-- A sender whose control ids restart (a reinstall, a counter reset) sends new messages under ids it
-- used before; only a resend of the same content may get the stored ACK (docs/ADT.md, "Exactly
-- once"). `digest` is the SHA-256 of the message's segments joined by CR (NULL: logged before this
-- migration; such a row keeps the old rule, same key = resend). A message refused because its
-- control id was already used for another is logged too, under its own control id, with
-- `control_id_used_by` naming the row that holds the id; so the one-row-per-key rule becomes a
-- unique index over the answered messages only, and the table is rebuilt (SQLite cannot drop a
-- table's UNIQUE constraint). A refused message resent gets its stored AR: one row per content.
-- `read_with` holds, for a parked message, the settings its text was read with at receipt
-- (HL7_DEFAULT_FACILITY, HL7_PATIENT_ID_TYPE, HL7_TIMEZONE): a retry reads it the same way.
CREATE TABLE hl7_messages_15 (
  id                 TEXT PRIMARY KEY,
  sending_application TEXT NOT NULL,
  sending_facility   TEXT NOT NULL,
  control_id         TEXT,
  message_type       TEXT,
  event              TEXT,
  facility           TEXT,
  encounter          TEXT,
  received_at        INTEGER NOT NULL,
  event_at           INTEGER,
  status             TEXT NOT NULL CHECK (status IN ('applied', 'ignored', 'parked', 'rejected', 'dismissed')),
  ack_code           TEXT NOT NULL CHECK (ack_code IN ('AA', 'AR')),
  ack                TEXT NOT NULL,
  error_field        TEXT,
  error              TEXT,
  park_code          TEXT,
  raw                TEXT,
  resolved_at        INTEGER,
  resolved_by        TEXT,
  digest             TEXT,
  control_id_used_by TEXT,                   -- refused: the id of the row that already had this control id
  read_with          TEXT,                   -- parked: JSON of the reading settings at receipt
  CHECK (control_id_used_by IS NULL OR (status = 'rejected' AND digest IS NOT NULL))
) STRICT;
INSERT INTO hl7_messages_15 (id, sending_application, sending_facility, control_id, message_type, event, facility,
  encounter, received_at, event_at, status, ack_code, ack, error_field, error, park_code, raw, resolved_at, resolved_by)
SELECT id, sending_application, sending_facility, control_id, message_type, event, facility,
  encounter, received_at, event_at, status, ack_code, ack, error_field, error, park_code, raw, resolved_at, resolved_by
FROM hl7_messages;
DROP TABLE hl7_messages;
ALTER TABLE hl7_messages_15 RENAME TO hl7_messages;
CREATE UNIQUE INDEX hl7_messages_answered ON hl7_messages (sending_application, sending_facility, control_id)
  WHERE control_id_used_by IS NULL;
CREATE UNIQUE INDEX hl7_messages_refused ON hl7_messages (control_id_used_by, digest)
  WHERE control_id_used_by IS NOT NULL;
CREATE INDEX hl7_messages_encounter_applied ON hl7_messages (encounter, event_at) WHERE status = 'applied';
CREATE INDEX hl7_messages_status ON hl7_messages (status, facility, received_at);
CREATE INDEX hl7_messages_raw_kept ON hl7_messages (received_at) WHERE raw IS NOT NULL;

-- migration 16: provider accounts seen as admins (who is told of a parked ADT message)
-- The service knows a person of the identity provider only from the tokens they present. An account
-- seen with the admin role is recorded with its facility (NULL: a token without one, every facility);
-- seen again with another facility it is moved, seen without the admin role it is removed. Parked ADT
-- messages are addressed to these accounts beside the owners of admin service tokens.
CREATE TABLE provider_admins (
  account     TEXT PRIMARY KEY,
  facility    TEXT,
  recorded_at INTEGER NOT NULL
) STRICT;
CREATE INDEX provider_admins_facility ON provider_admins (facility);

-- migration 17: provider accounts in a namespace of their own (oidc:<claim value>)
-- A provider token's account is `oidc:` and its claim's value, so a claim saying `admin` is never
-- the service account `admin`; no service token may take an account in that namespace.
-- - provider_admins holds provider accounts only: each gets the prefix.
-- - A block named one word for both kinds: `admin` blocked the service account and any provider
--   token saying `admin`. Both stay blocked: the provider's side as `oidc:admin` beside it, so the
--   upgrade unblocks no one (`account unblock` the one that was not meant).
-- - A service token whose account already starts with `oidc:` (any case) would act as a provider
--   person: it is revoked (`token list` shows it; create another under a plain account).
-- - Notifications keep the addressees and readers they were written with: who a bare name meant
--   cannot be told afterwards (docs/SIGN-IN.md, "Accounts"). But one named `oidc:ann` was a service
--   account (revoked above) or a provider claim saying `oidc:ann`, now `oidc:oidc:ann`; never the
--   person whose claim is `ann`, who would read it as `oidc:ann`: such names get the prefix. Marks
--   go first and come back last, so the triggers keep the counts (migration 12).
-- Through a copy: row by row in place, `ann` -> `oidc:ann` would meet a claim that was `oidc:ann`.
CREATE TEMP TABLE provider_admins_bare AS SELECT * FROM provider_admins;
DELETE FROM provider_admins;
INSERT INTO provider_admins (account, facility, recorded_at)
SELECT 'oidc:' || account, facility, recorded_at FROM provider_admins_bare;
DROP TABLE provider_admins_bare;
-- A block of `oidc:x` named a service account (revoked below) or a claim saying `oidc:x`, now
-- `oidc:oidc:x`; never the person whose claim is `x`: it moves, unless a block of bare `x` meant them.
CREATE TEMP TABLE m17_blocks AS SELECT * FROM blocked_accounts;
DELETE FROM blocked_accounts WHERE account GLOB 'oidc:*';
INSERT INTO blocked_accounts (account, blocked_at, reason)
SELECT 'oidc:' || account, blocked_at, reason FROM m17_blocks WHERE true
ON CONFLICT (account) DO NOTHING;
DROP TABLE m17_blocks;
UPDATE tokens SET revoked_at = CAST(unixepoch('subsec') * 1000 AS INTEGER)
WHERE account LIKE 'oidc:%' AND revoked_at IS NULL;
CREATE TEMP TABLE m17_seen AS SELECT * FROM notification_seen WHERE account GLOB 'oidc:*';
CREATE TEMP TABLE m17_recipients AS SELECT * FROM notification_recipients WHERE account GLOB 'oidc:*';
DELETE FROM notification_seen WHERE account GLOB 'oidc:*';
DELETE FROM notification_recipients WHERE account GLOB 'oidc:*';
INSERT INTO notification_recipients (account, notification_id, created_at, facility, unbound_only)
SELECT 'oidc:' || account, notification_id, created_at, facility, unbound_only FROM m17_recipients;
INSERT INTO notification_seen (notification_id, account, seen_at, facility)
SELECT notification_id, 'oidc:' || account, seen_at, facility FROM m17_seen;
DROP TABLE m17_seen;
DROP TABLE m17_recipients;
UPDATE notifications SET recipients = (
  SELECT json_group_array(CASE WHEN value GLOB 'oidc:*' THEN 'oidc:' || value ELSE value END)
  FROM (SELECT value FROM json_each(notifications.recipients) ORDER BY key))
WHERE EXISTS (SELECT 1 FROM json_each(notifications.recipients) WHERE value GLOB 'oidc:*');
UPDATE notifications SET seen_by = (
  SELECT json_group_array(CASE WHEN value GLOB 'oidc:*' THEN 'oidc:' || value ELSE value END)
  FROM (SELECT value FROM json_each(notifications.seen_by) ORDER BY key))
WHERE EXISTS (SELECT 1 FROM json_each(notifications.seen_by) WHERE value GLOB 'oidc:*');

-- migration 18: the ADT log keeps no patient data past HL7_KEEP_DAYS, and no refused sender
-- After HL7_KEEP_DAYS (a parked message: once resolved) a logged message keeps only what
-- exactly-once needs: its sender, control id, digest, status and the ACK, whose MSA-3 is cut to
-- applied / ignored / parked (a parked one named the encounter, bed and occupant). Its text,
-- encounter and reason are cleared, and `pruned_at` says when; the index finds the rows not yet
-- pruned, which `raw IS NOT NULL` no longer does (a row whose text went still had the rest).
-- A message of a sender not in HL7_ALLOWED_SENDERS is no longer logged (its answer is counted):
-- those logged before go, with the ACK that echoed their header, and so do the control ids they
-- held in another sender's name.
ALTER TABLE hl7_messages ADD COLUMN pruned_at INTEGER;
DROP INDEX hl7_messages_raw_kept;
CREATE INDEX hl7_messages_unpruned ON hl7_messages (received_at) WHERE pruned_at IS NULL;
DELETE FROM hl7_messages WHERE status = 'rejected' AND error_field = 'MSH-3' AND raw IS NULL;

-- migration 19: bed states: housekeeping, expected patients, leave and expected discharges (docs/BOARD.md)
-- A bed's housekeeping state (HL7 table 0116 beyond occupied and unoccupied: closed, being cleaned,
-- contaminated, isolated) is set by staff (PUT /beds/:bed/state, `facility-service beds state`) or
-- by an ADT A20; no row: none. A pending admission or transfer (A14, A15) names the bed a patient is
-- expected in: one expectation a bed, cleared by the cancel, by that encounter's admission into the
-- bed (the trigger below), or read as gone after BED_EXPECTED_HOURS. A stay's marks (on leave,
-- discharge expected) live beside the stay, not in it: the ward-occupant record's fields are fixed.
-- facility '' stands for the records without one, as in seen_beds.
CREATE TABLE bed_states (
  facility TEXT NOT NULL,
  bed      TEXT NOT NULL,
  state    TEXT NOT NULL CHECK (state IN ('cleaning', 'closed', 'contaminated', 'isolated')),
  since    INTEGER NOT NULL,
  set_by   TEXT NOT NULL,
  note     TEXT,
  PRIMARY KEY (facility, bed)
) STRICT, WITHOUT ROWID;
CREATE TABLE bed_expectations (
  facility  TEXT NOT NULL,
  bed       TEXT NOT NULL,
  encounter TEXT NOT NULL,
  kind      TEXT NOT NULL CHECK (kind IN ('admission', 'transfer')),
  since     INTEGER NOT NULL,
  set_by    TEXT NOT NULL,
  PRIMARY KEY (facility, bed)
) STRICT, WITHOUT ROWID;
CREATE INDEX bed_expectations_encounter ON bed_expectations (encounter);
CREATE TABLE stay_marks (
  occupant TEXT NOT NULL REFERENCES ward_occupants (id) ON DELETE CASCADE,
  mark     TEXT NOT NULL CHECK (mark IN ('on-leave', 'discharge-expected')),
  since    INTEGER NOT NULL,
  set_by   TEXT NOT NULL,
  PRIMARY KEY (occupant, mark)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER ward_occupants_expected_arrived AFTER INSERT ON ward_occupants
BEGIN DELETE FROM bed_expectations
  WHERE facility = coalesce(NEW.facility, '') AND bed = NEW.bed AND encounter = NEW.encounter; END;
-- A stay that ends is neither away nor about to be discharged any more.
CREATE TRIGGER ward_occupants_marks_end AFTER UPDATE OF discharged_at ON ward_occupants
WHEN NEW.discharged_at IS NOT NULL
BEGIN DELETE FROM stay_marks WHERE occupant = NEW.id; END;
-- A bed whose only stays were removed (an A11, an A12, a DELETE of a mistyped admission) is not a
-- bed of the ward: its seen_beds row goes with its last stay. Beds left so before this migration go now.
CREATE TRIGGER ward_occupants_unseen_bed AFTER DELETE ON ward_occupants
WHEN NOT EXISTS (SELECT 1 FROM ward_occupants WHERE bed = OLD.bed AND facility IS OLD.facility)
BEGIN DELETE FROM seen_beds WHERE facility = coalesce(OLD.facility, '') AND bed = OLD.bed; END;
DELETE FROM seen_beds WHERE NOT EXISTS (
  SELECT 1 FROM ward_occupants o WHERE o.bed = seen_beds.bed AND coalesce(o.facility, '') = seen_beds.facility);
-- The live feed carries bed-state changes (resource 'bed-states'): the CHECK of its resource column
-- grows, which SQLite can only do by rebuilding the table, keeping every seq and the counter.
CREATE TABLE feed_events_17 (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  at        INTEGER NOT NULL,
  resource  TEXT NOT NULL CHECK (resource IN ('ward-occupants', 'form-templates', 'notifications', 'bed-states')),
  action    TEXT NOT NULL CHECK (action IN ('created', 'patched', 'removed')),
  record_id TEXT NOT NULL,
  facility  TEXT,
  payload   TEXT NOT NULL,
  audience  TEXT CHECK (audience IN ('bound', 'unbound'))
) STRICT;
INSERT INTO feed_events_17 (seq, at, resource, action, record_id, facility, payload, audience)
  SELECT seq, at, resource, action, record_id, facility, payload, audience FROM feed_events;
DELETE FROM sqlite_sequence WHERE name = 'feed_events_17';
INSERT INTO sqlite_sequence (name, seq) SELECT 'feed_events_17', seq FROM sqlite_sequence WHERE name = 'feed_events';
DROP TABLE feed_events;
ALTER TABLE feed_events_17 RENAME TO feed_events;
CREATE INDEX feed_events_at ON feed_events (at);

-- migration 20: an expectation ends with its encounter's admission or transfer into any bed of its facility
-- A patient expected in one bed and admitted or moved into another (the HIS chose another bed) is
-- no longer expected: the bed it named does not go on showing them. Another facility's expectation
-- of the same encounter is that facility's, and stays.
DROP TRIGGER ward_occupants_expected_arrived;
CREATE TRIGGER ward_occupants_expected_arrived AFTER INSERT ON ward_occupants
BEGIN DELETE FROM bed_expectations
  WHERE facility = coalesce(NEW.facility, '') AND encounter = NEW.encounter; END;

-- migration 21: indexes no query uses, dropped
-- Every index is written with every row of its table, so each must serve a query the service runs
-- (test/db/indexes.test.ts lists them, with the query whose plan uses each). These served none:
-- - audit_log_at: the audit log is never pruned, and no listed query filters it by time;
-- - feed_events_at: the feed's retention finds its oldest events in seq order (db/repositories/feed.ts);
-- - notifications_created, notifications_facility_created: a viewer's notifications are read through
--   the audience and inbox indexes (migration 11), each branch in created_at order, a facility
--   filter applied on the way. (notifications_type and notifications_code stay: they count a type's
--   or a code's notifications for a caller without a facility.)
-- A create, a discharge and an ADT admission each write 4 b-trees fewer.
DROP INDEX audit_log_at;
DROP INDEX feed_events_at;
DROP INDEX notifications_created;
DROP INDEX notifications_facility_created;
