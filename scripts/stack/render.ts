// Renders the config templates of deploy/: `${NAME}` is replaced by its value, and the lines between
// `#if NAME` and `#endif` are kept only when NAME has a non-empty value. An unknown name is an error, so a
// typo in a template can't silently produce an empty setting.
export function renderTemplate(template: string, vars: Record<string, string | number | undefined>): string {
  const out: string[] = [];
  let skipping: string | null = null;
  for (const line of template.split('\n')) {
    const open = /^#if ([A-Z0-9_]+)\s*$/.exec(line);
    if (open) {
      if (skipping !== null) throw new Error('nested #if blocks are not supported');
      const v = vars[open[1]!];
      skipping = v === undefined || v === '' ? open[1]! : '';
      continue;
    }
    if (/^#endif\s*$/.test(line)) {
      skipping = null;
      continue;
    }
    if (skipping) continue;
    if (/^\s*#/.test(line)) {
      out.push(line); // comments may mention ${NAME} itself
      continue;
    }
    out.push(
      line.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
        const v = vars[name];
        if (v === undefined || v === '') throw new Error(`template variable ${name} has no value`);
        return String(v);
      }),
    );
  }
  return out.join('\n');
}
