/**
 * `text` broken into lines of at most `width` characters at spaces (a word longer than the width
 * is cut into pieces), so a terminal that does not wrap by itself (cli-progress turns wrapping off
 * while it draws bars) shows all of it. Lines after the first are indented by `indent` spaces.
 */
export function wrapText(text: string, width: number, indent = 2): string {
  if (!(width > indent + 10)) return text;
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const room = width - (lines.length === 0 ? 0 : indent);
    if (line !== '' && line.length + 1 + word.length > room) {
      lines.push(line);
      line = '';
    }
    let rest = word;
    while (rest.length > width - indent) {
      if (line !== '') lines.push(line);
      line = '';
      lines.push(rest.slice(0, width - indent));
      rest = rest.slice(width - indent);
    }
    line = line === '' ? rest : `${line} ${rest}`;
  }
  lines.push(line);
  return lines.map((l, i) => (i === 0 ? l : `${' '.repeat(indent)}${l}`)).join('\n');
}

/** `text` wrapped to the width of `stream` when it is a terminal, as it is otherwise. */
export function wrapForTerminal(text: string, stream: NodeJS.WriteStream = process.stderr): string {
  return stream.isTTY && stream.columns
    ? text
        .split('\n')
        .map((line) => wrapText(line, stream.columns))
        .join('\n')
    : text;
}
