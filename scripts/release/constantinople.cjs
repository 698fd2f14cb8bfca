// What `constantinople` resolves to in the single executable's bundle (bundle.mjs, `alias`): the
// literal-only folding of render/constant-folding.ts. Outside the bundle render/pug-safe.ts puts
// the same function in require's cache instead; a bundle has no cache to fill.
module.exports = require('../../render/constant-folding.ts').literalOnly
