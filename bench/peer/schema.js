// The peer's tables. ward_occupants is the service's table (schema.sql: same columns, types,
// STRICT, indexes, the partial unique index that keeps one active occupant per bed), with its
// columns named as the API names them (createdAt, not created_at): a Feathers app lets the knex
// adapter use the query's names as column names, so no name mapping sits between them.
// tokens holds the bench's bearer tokens, by SHA-256, with the account, role and facility each
// stands for; the server reads it into a Map when it starts.
export const PEER_SCHEMA = `
CREATE TABLE ward_occupants (
  id           TEXT PRIMARY KEY,
  version      INTEGER NOT NULL DEFAULT 1,
  createdAt    INTEGER NOT NULL,
  createdBy    TEXT NOT NULL,
  facility     TEXT,
  encounter    TEXT NOT NULL,
  room         TEXT,
  bed          TEXT NOT NULL,
  provider     TEXT,
  occupiedAt   INTEGER NOT NULL,
  occupiedBy   TEXT NOT NULL,
  dischargedAt INTEGER,
  dischargedBy TEXT
) STRICT;
CREATE INDEX ward_occupants_bed ON ward_occupants (bed, facility, occupiedAt, dischargedAt);
CREATE INDEX ward_occupants_facility_created ON ward_occupants (facility, createdAt, id);
CREATE INDEX ward_occupants_created ON ward_occupants (createdAt, id);
CREATE INDEX ward_occupants_encounter ON ward_occupants (encounter);
CREATE INDEX ward_occupants_occupied_by ON ward_occupants (occupiedBy);
CREATE INDEX ward_occupants_active ON ward_occupants (facility, dischargedAt, createdAt, id,
  version, createdBy, encounter, room, bed, provider, occupiedAt, occupiedBy, dischargedBy)
  WHERE dischargedAt IS NULL;
CREATE UNIQUE INDEX ward_occupants_active_bed ON ward_occupants (ifnull(facility, ''), bed)
  WHERE dischargedAt IS NULL;
CREATE TABLE tokens (
  hash     TEXT PRIMARY KEY,
  account  TEXT NOT NULL,
  role     TEXT NOT NULL,
  facility TEXT
) STRICT;
`
