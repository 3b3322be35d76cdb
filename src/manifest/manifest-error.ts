/** A manifest that does not parse or validate: names the file, line and key. */
export class ManifestError extends Error {
  readonly code = 'SEEDLINE_MANIFEST_INVALID';
}
