import { type Static, Type } from '@sinclair/typebox'

/**
 * The settings of the FHIR R4 endpoint at /fhir (docs/FHIR.md), part of the one environment schema
 * (config.ts spreads them in). Each has a description: the settings reference is made from them.
 */
export const FHIR_SETTINGS = {
  FHIR_PATIENT_SYSTEM: Type.String({
    minLength: 1,
    default: 'urn:facility-service:patient',
    description:
      "the identifier system of the patients' accounts (Encounter.subject.identifier.system): the hospital's patient number system, e.g. its MRN namespace URI",
  }),
  FHIR_PRACTITIONER_SYSTEM: Type.String({
    minLength: 1,
    default: 'urn:facility-service:practitioner',
    description:
      'the identifier system of the providers named on stays (Encounter.participant.individual.identifier.system)',
  }),
  FHIR_ENCOUNTER_SYSTEM: Type.String({
    minLength: 1,
    default: 'urn:facility-service:encounter',
    description: 'the identifier system of the encounter (visit) numbers (Encounter.identifier.system)',
  }),
  FHIR_CANONICAL_BASE: Type.String({
    minLength: 1,
    default: 'urn:facility-service',
    description:
      "the base of this site's canonical URLs (a Questionnaire's url is this base + /Questionnaire/ + its id), e.g. https://ward.example.org/fhir",
  }),
  FHIR_ENCOUNTER_CLASS: Type.Union(
    ['IMP', 'ACUTE', 'NONAC', 'SS', 'OBSENC', 'EMER', 'AMB', 'HH', 'VR', 'PRENC', 'FLD'].map((code) =>
      Type.Literal(code),
    ),
    {
      default: 'IMP',
      description:
        'the Encounter.class code (system http://terminology.hl7.org/CodeSystem/v3-ActCode) of every stay: IMP inpatient, SS short stay, OBSENC observation ...',
    },
  ),
  FHIR_BASE_URL: Type.String({
    default: '',
    description:
      'the public base URL of the FHIR endpoint (e.g. https://ward.example.org/fhir) used in fullUrl and paging links; empty: taken from each request (Host, and X-Forwarded-* when TRUST_PROXY allows)',
  }),
  FHIR_PAGE_SIZE: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 50,
    description: 'the entries of a search page when the client sends no _count',
  }),
  FHIR_MAX_SCAN_STAYS: Type.Integer({
    minimum: 1,
    maximum: 10_000_000,
    default: 10_000,
    description:
      "the most stays of the ward's history an Encounter search without a narrowing condition (status=in-progress or planned, identifier, a patient, _id) may read, all of them or, by location, those of the encounters ever in its beds; past it the search is answered 400 too-costly (each stay read costs some 45 µs of the server's time and 5 KB while the answer is made)",
  }),
  FHIR_CACHE_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1_073_741_824,
    default: 8_388_608,
    description:
      'memory for the FHIR view of the ward (its Locations and Encounters) remembered until the database next changes (a dashboard polls the same beds); 0 turns it off',
  }),
  FHIR_MAX_PAGE_SIZE: Type.Integer({
    minimum: 1,
    maximum: 5000,
    default: 500,
    description: 'the most entries of a search page: a larger _count is lowered to it',
  }),
}

const FhirSchema = Type.Object(FHIR_SETTINGS)
export type FhirSettings = Static<typeof FhirSchema>
