/**
 * The text a command's help ends with: its examples, one `$ seedline …` line each.
 *
 * @example
 * ```ts
 * command.addHelpText('after', helpExamples('sync --config seedline.yaml'));
 * ```
 */
export function helpExamples(...commandLines: string[]): string {
  // commander ends the text with a newline of its own.
  return `\nExamples:\n${commandLines.map((line) => `  $ seedline ${line}`).join('\n')}`;
}
