import { bearer, type TestApp } from '../helper.js'

/** A template with one question of each kind that needs choices and one that does not. */
export const intake = {
  type: 'intake',
  subtype: 'adult',
  name: 'Admission intake',
  tags: ['vitals', 'restriction::ward-3'],
  items: [
    { question: 'Smoker?', type: 'trueorfalse', required: true },
    {
      id: 'allergies',
      question: 'Known allergies',
      type: 'checklist',
      choices: ['penicillin', 'latex'],
      set: 'history',
    },
    { question: 'Pain level', type: 'multiplechoice', choices: ['none', 'mild', 'severe'], order: 3 },
  ],
}

/** The five form-template endpoints with one token, through app.inject only. */
export function client(app: TestApp, token: string) {
  const headers = (extra: Record<string, string> = {}) => ({ ...bearer(token), ...extra })
  return {
    post: (payload: unknown) =>
      app.inject({ method: 'POST', url: '/form-templates', headers: headers(), payload: payload as object }),
    get: (id: string) => app.inject({ url: `/form-templates/${id}`, headers: headers() }),
    list: (query = '') => app.inject({ url: `/form-templates?${query}`, headers: headers() }),
    patch: (id: string, payload: unknown, extra: Record<string, string> = {}) =>
      app.inject({
        method: 'PATCH',
        url: `/form-templates/${id}`,
        headers: headers(extra),
        payload: payload as object,
      }),
    remove: (id: string, extra: Record<string, string> = {}) =>
      app.inject({ method: 'DELETE', url: `/form-templates/${id}`, headers: headers(extra) }),
  }
}
