/** The OpenAPI 3.1 document of the service. */
export function buildOpenApiDocument(): Record<string, unknown> {
  return { openapi: '3.1.0', info: { title: 'Professional-network data service', version: '1.0.0' }, paths: {} };
}
