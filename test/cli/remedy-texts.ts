// Every remedy written in the source, found by reading it (the TypeScript compiler's syntax tree), so a remedy added
// anywhere is checked without editing the test: the value of each `remedy:` and `fix:` (a doctor check's), each
// argument of `output.next(…)` (the "Next:" lines), each step of the wizard's `nextSteps`, and the error table's
// defaults. A template's `${…}` is a hole: a value only the running code knows.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { ERROR_CODES } from '../../src/contract/errors.js';
import { REPO_ROOT } from '../helpers/svc-api.js';

/** Stands for a `${…}` of a template: a value only the running code has. */
export const HOLE = 'VALUE_AT_RUN_TIME';

export interface RemedyText {
  /** file:line, or `ERROR_CODES.<code>`. */
  where: string;
  text: string;
}

const REMEDY_PROPERTIES = new Set(['remedy', 'fix']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The texts an expression can be: both branches of a condition, the pieces of a `+` joined, a hole for the rest. */
function textsOf(node: ts.Expression): string[] {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text];
  if (ts.isTemplateExpression(node)) return [node.head.text + node.templateSpans.map((span) => HOLE + span.literal.text).join('')];
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) return textsOf(node.expression);
  // `….trim()`: the text it trims.
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && /^trim/.test(node.expression.name.text))
    return textsOf(node.expression.expression);
  if (ts.isConditionalExpression(node)) return [...textsOf(node.whenTrue), ...textsOf(node.whenFalse)];
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    return textsOf(node.left).flatMap((left) => textsOf(node.right).map((right) => left + right));
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken)
    return [...textsOf(node.left), ...textsOf(node.right)];
  if (ts.isArrayLiteralExpression(node)) return node.elements.flatMap((element) => textsOf(element as ts.Expression));
  if (ts.isObjectLiteralExpression(node)) {
    // A table of remedies by code (`{ email_code_invalid: '…' }`).
    return node.properties.flatMap((property) => (ts.isPropertyAssignment(property) ? textsOf(property.initializer) : []));
  }
  return [HOLE];
}

function nameOf(node: ts.PropertyName | ts.BindingName): string | undefined {
  return ts.isIdentifier(node) || ts.isStringLiteral(node) ? node.text : undefined;
}

/** The remedies written in src/: what the CLI prints after an error, or as the next step. */
export function remedyTexts(): RemedyText[] {
  const found: RemedyText[] = [];
  for (const file of sourceFiles(join(REPO_ROOT, 'src'))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (node: ts.Node, texts: string[]) => {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      for (const text of texts) found.push({ where: `${relative(REPO_ROOT, file)}:${line}`, text });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && REMEDY_PROPERTIES.has(nameOf(node.name) ?? '')) add(node, textsOf(node.initializer));
      // `const remedy = …`, `const fix = …`: a remedy kept in a variable first.
      if (ts.isVariableDeclaration(node) && REMEDY_PROPERTIES.has(nameOf(node.name) ?? '') && node.initializer !== undefined)
        add(node, textsOf(node.initializer));
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'next' &&
        node.arguments.length === 1
      ) {
        add(node, textsOf(node.arguments[0]!));
      }
      // The wizard's next steps (a result field, shown as "Next:").
      if (ts.isFunctionDeclaration(node) && node.name?.text === 'nextSteps') {
        const inner = (each: ts.Node): void => {
          if (ts.isCallExpression(each) && ts.isPropertyAccessExpression(each.expression) && each.expression.name.text === 'push') {
            for (const argument of each.arguments) add(each, textsOf(argument));
          }
          ts.forEachChild(each, inner);
        };
        inner(node);
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    if ('remedy' in info) found.push({ where: `ERROR_CODES.${code}`, text: info.remedy });
  }
  return found;
}
