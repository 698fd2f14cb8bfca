/**
 * FHIR errors: every error under /fhir is answered as an OperationOutcome (fhir/index.ts). Pure.
 */

/** The FHIR issue types (http://hl7.org/fhir/R4/valueset-issue-type.html) the endpoint answers with. */
export type IssueCode =
  | 'invalid'
  | 'structure'
  | 'required'
  | 'value'
  | 'not-found'
  | 'forbidden'
  | 'login'
  | 'security'
  | 'not-supported'
  | 'conflict'
  | 'processing'
  | 'business-rule'
  | 'throttled'
  | 'transient'
  | 'too-costly'
  | 'exception'

export class FhirError extends Error {
  readonly statusCode: number
  readonly issueCode: IssueCode
  readonly expression: string[] | undefined
  constructor(statusCode: number, issueCode: IssueCode, diagnostics: string, expression?: string[]) {
    super(diagnostics)
    this.name = 'FhirError'
    this.statusCode = statusCode
    this.issueCode = issueCode
    this.expression = expression
  }
}

/** The issue type an HTTP status stands for when nothing more precise is known. */
export const ISSUE_OF_STATUS: Readonly<Record<number, IssueCode>> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  408: 'transient',
  409: 'conflict',
  410: 'not-found',
  412: 'conflict',
  413: 'too-costly',
  415: 'not-supported',
  422: 'processing',
  429: 'throttled',
  503: 'transient',
}

export function issueOfStatus(status: number): IssueCode {
  return ISSUE_OF_STATUS[status] ?? (status >= 500 ? 'exception' : 'invalid')
}

export interface OperationOutcome {
  resourceType: 'OperationOutcome'
  issue: {
    severity: 'error' | 'information'
    code: IssueCode | 'informational'
    diagnostics: string
    details?: { text: string }
    expression?: string[]
  }[]
}

/** `code`: the service's own error code (BED_OCCUPIED ...), kept as the issue's details. */
export function operationOutcome(
  issueCode: IssueCode,
  diagnostics: string,
  options: { expression?: string[]; code?: string } = {},
): OperationOutcome {
  return {
    resourceType: 'OperationOutcome',
    issue: [
      {
        severity: 'error',
        code: issueCode,
        diagnostics,
        ...(options.code === undefined ? {} : { details: { text: options.code } }),
        ...(options.expression === undefined || options.expression.length === 0
          ? {}
          : { expression: options.expression }),
      },
    ],
  }
}

/** The outcome of an error body of the rest of the API (`{ statusCode, message, code }`). */
export function outcomeOfErrorBody(status: number, body: { message?: unknown; code?: unknown }): OperationOutcome {
  const message = typeof body.message === 'string' ? body.message : `HTTP ${status}`
  const code = typeof body.code === 'string' ? body.code : undefined
  return operationOutcome(issueOfStatus(status), message, { code })
}
