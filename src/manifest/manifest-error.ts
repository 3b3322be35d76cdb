/** A manifest that does not parse or validate: names the file, line and key. */
export class ManifestError extends Error {
  readonly code = 'SEEDLINE_MANIFEST_INVALID';
}

/** A stream whose manifest or options cannot run as written (a template that renders to no path, a case missing, …). */
export class StreamDefinitionError extends Error {
  readonly code = 'SEEDLINE_STREAM_INVALID';
}
