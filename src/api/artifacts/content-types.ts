// An artifact's Content-Type, guessed from its name's extension (docs/api.md "Run artifacts"): what the reference
// agents write and what a browser or a tool handles by type; anything else is bytes. A download is always an
// attachment with X-Content-Type-Options: nosniff, so a type never makes the service's origin render an agent's file.
const BY_EXTENSION: Readonly<Record<string, string>> = {
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
  sarif: 'application/sarif+json',
  eml: 'message/rfc822',
  html: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
};

export function artifactContentType(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 && BY_EXTENSION[name.slice(dot + 1).toLowerCase()]) || 'application/octet-stream';
}
