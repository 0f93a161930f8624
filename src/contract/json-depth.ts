// How deep JSON text nests (docs/api.md "Conventions"): counted on the text, before it is parsed, in one pass and
// without recursion, so a body of `[[[[…` tens of thousands deep is refused before anything recursive (JSON.parse's
// callers, JSON.stringify, a canonical form, a schema validator) walks it and overflows the stack.

/**
 * The deepest JSON a service request body, an execute's input or a node's result may be: the body's own object or
 * array is level 1, so an execute's `input` may nest 63 levels. Far above what any agent's input or output needs,
 * far below what overflows a recursive walk of it.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of JSON text (0 for a scalar, 1 for `{}` or `[]`), or `limit + 1` as soon as it goes deeper
 * than `limit`. Brackets inside strings do not count. Malformed text is measured all the same: the parser refuses
 * it afterwards with its own message.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index += 1; // a backslash: the next character is escaped, a quote included
      else if (code === 0x22) inString = false;
      continue;
    }
    if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
  }
  return deepest;
}
