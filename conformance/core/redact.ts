/**
 * Secrets never reach a report: every credential the run sends or receives is remembered
 * by the run's Redactor and shown as a placeholder ($TOKEN, $CLIENT_SECRET...), which a
 * reader's shell variable of that name fills in when a curl line is pasted. One Redactor
 * per run, so two runs in one process never see each other's secrets.
 */

export type Placeholder = '$SANDBOX_TOKEN' | '$TOKEN' | '$CLIENT_SECRET' | '$WEBHOOK_SECRET' | '$ACCESS_TOKEN';

export const PLACEHOLDERS = [
  'SANDBOX_TOKEN',
  'TOKEN',
  'CLIENT_SECRET',
  'WEBHOOK_SECRET',
  'ACCESS_TOKEN',
  'CREDENTIALS',
];

/** How long a report's excerpt of a text may be, by default, once its secrets are replaced. */
export const EXCERPT = 300;

/**
 * A known secret's start, this long or longer, is taken for the secret cut short (a text
 * cut by an earlier hand, ended with "…"): shorter, it may be another value's own start.
 */
const CUT_SECRET = 12;

/** JSON keys and form fields whose values are secrets, and what is shown instead. */
const SECRET_FIELDS: Record<string, Placeholder> = {
  clientSecret: '$CLIENT_SECRET',
  webhookSigningSecret: '$WEBHOOK_SECRET',
  accessToken: '$ACCESS_TOKEN',
};

/** Each secret field's value in JSON and in a form (ended by the next field, a space or a quote), made once. */
const FIELD_PATTERNS = Object.entries(SECRET_FIELDS).map(([key, placeholder]) => ({
  json: new RegExp(`("${key}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'g'),
  form: new RegExp(`((?:^|[&?\\s])${key}=)[^&\\s"']*`, 'g'),
  placeholder,
}));

/**
 * Past this many known secrets (a proxy before clients that fetch a token per call holds
 * thousands), a text is searched through an index of them rather than once per secret.
 */
const FEW_SECRETS = 64;
/** The characters a secret is looked up by, at its end: every known secret is at least this long. */
const TAIL = 6;

type Known = Array<[string, Placeholder]>;

/** The known secrets in the forms a search needs, made again only when a secret is added. */
interface Index {
  /** Longest first, so that a secret containing another is replaced whole. */
  longestFirst: Known;
  /** By their last TAIL characters, longest first within each. */
  byTail: Map<string, Known>;
  /** Those a cut start can be told from (longer than CUT_SECRET), in code-unit order, for prefix search. */
  sorted: Known;
  /** The characters they start with: elsewhere no search is begun. */
  starts: Set<string>;
}

export class Redactor {
  private readonly secrets = new Map<string, Placeholder>();
  private index: Index | undefined;

  constructor(private readonly sandboxToken?: string) {
    this.remember(sandboxToken, '$SANDBOX_TOKEN');
  }

  /** Remembers a secret value, so that it is replaced wherever it appears. */
  remember(value: unknown, placeholder: Placeholder): void {
    if (typeof value === 'string' && value.length >= TAIL && !this.secrets.has(value)) {
      this.secrets.set(value, placeholder);
      this.index = undefined;
    }
  }

  /** Remembers the values of secret fields anywhere in a JSON value. */
  rememberFromJson(value: unknown, depth = 0): void {
    if (!value || typeof value !== 'object' || depth > 6) return;
    for (const [key, inner] of Object.entries(value)) {
      const placeholder = SECRET_FIELDS[key];
      if (placeholder) this.remember(inner, placeholder);
      else this.rememberFromJson(inner, depth + 1);
    }
  }

  /** Remembers what a request carries: a bearer token, a client secret in a form. */
  rememberFromRequest(headers: Record<string, string>, form: Record<string, string> | undefined): void {
    if (form?.clientSecret !== undefined) this.remember(form.clientSecret, '$CLIENT_SECRET');
    const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
    if (bearer && bearer !== this.sandboxToken) this.remember(bearer, '$ACCESS_TOKEN');
  }

  /** An Authorization value with its credentials replaced by a placeholder. */
  authorization(value: string): string {
    const match = /^(\S+)(\s+)([\s\S]*)$/.exec(value);
    if (!match) return '$CREDENTIALS';
    const [, scheme, space, rest] = match as unknown as [string, string, string, string];
    if (/^bearer$/i.test(scheme)) {
      const inner = /^(bearer\s+)([\s\S]*)$/i.exec(rest);
      const token = inner ? inner[2]! : rest;
      const placeholder = this.sandboxToken !== undefined && token === this.sandboxToken ? '$SANDBOX_TOKEN' : '$TOKEN';
      return `${scheme}${space}${inner ? inner[1] : ''}${placeholder}`;
    }
    return `${scheme}${space}$CREDENTIALS`;
  }

  /** A text with every known secret, and the values of secret JSON or form fields, replaced. */
  text(text: string): string {
    let out = text;
    for (const { json, form, placeholder } of FIELD_PATTERNS) {
      out = out.replace(json, `$1"${placeholder}"`);
      out = out.replace(form, `$1${placeholder}`);
    }
    const index = this.indexed();
    if (index.longestFirst.length > FEW_SECRETS) return withoutCutStarts(withoutWhole(out, index), index);
    for (const [value, placeholder] of index.longestFirst) out = out.split(value).join(placeholder);
    // Then what is left of one cut short: a text made before the secret was known, and cut
    // since, holds its start only.
    for (const [value, placeholder] of index.longestFirst)
      if (value.length > CUT_SECRET) out = withoutStart(out, value, placeholder);
    return out;
  }

  private indexed(): Index {
    if (this.index) return this.index;
    const longestFirst = [...this.secrets].sort((a, b) => b[0].length - a[0].length);
    const byTail = new Map<string, Known>();
    for (const known of longestFirst) {
      const tail = known[0].slice(-TAIL);
      byTail.set(tail, [...(byTail.get(tail) ?? []), known]);
    }
    const sorted = longestFirst
      .filter(([value]) => value.length > CUT_SECRET)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    this.index = { longestFirst, byTail, sorted, starts: new Set(sorted.map(([value]) => value[0]!)) };
    return this.index;
  }

  /**
   * A text as a report shows an excerpt of it: its secrets replaced first, then cut to `max`
   * characters (cut first, a secret would be left half shown, its half no longer known).
   */
  clip(text: string, max = EXCERPT): string {
    const redacted = this.text(text);
    return redacted.length > max ? `${redacted.slice(0, max)}… (${redacted.length} characters)` : redacted;
  }

  /** Header pairs for display: Authorization by its scheme, the rest as text. */
  headers(headers: Record<string, string>): Array<[string, string]> {
    return Object.entries(headers).map(([name, value]) => [
      name,
      name.toLowerCase() === 'authorization' ? this.authorization(value) : this.text(value),
    ]);
  }
}

/** `text` with every run of `CUT_SECRET` or more characters that starts `secret` replaced by `placeholder`. */
function withoutStart(text: string, secret: string, placeholder: string): string {
  const head = secret.slice(0, CUT_SECRET);
  let out = '';
  let from = 0;
  for (let at = text.indexOf(head); at >= 0; at = text.indexOf(head, at + 1)) {
    if (at < from) continue;
    let end = at + CUT_SECRET;
    while (end < text.length && end - at < secret.length && text[end] === secret[end - at]) end += 1;
    out += `${text.slice(from, at)}${placeholder}`;
    from = end;
  }
  return out + text.slice(from);
}

/**
 * `text` with every known secret replaced, found by its last characters at each place it
 * could end: one pass over the text, whatever the number of secrets. Where two overlap, the
 * one that starts first wins, and of those the longest.
 */
function withoutWhole(text: string, index: Index): string {
  const found: Array<{ start: number; end: number; placeholder: string }> = [];
  for (let end = TAIL; end <= text.length; end++) {
    const candidates = index.byTail.get(text.slice(end - TAIL, end));
    const hit = candidates?.find(([value]) => end >= value.length && text.startsWith(value, end - value.length));
    if (hit) found.push({ start: end - hit[0].length, end, placeholder: hit[1] });
  }
  if (found.length === 0) return text;
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let from = 0;
  for (const f of found) {
    if (f.start < from) continue;
    out += `${text.slice(from, f.start)}${f.placeholder}`;
    from = f.end;
  }
  return out + text.slice(from);
}

/**
 * `text` with what is left of a known secret cut short (its first CUT_SECRET characters or
 * more, where a word starts) replaced, found by prefix search among the secrets in order.
 */
function withoutCutStarts(text: string, index: Index): string {
  const { sorted } = index;
  if (sorted.length === 0) return text;
  let out = '';
  let from = 0;
  for (let at = 0; at + CUT_SECRET <= text.length; at++) {
    if (at < from || !index.starts.has(text[at]!) || (at > 0 && /[A-Za-z0-9]/.test(text[at - 1]!))) continue;
    // Narrow the secrets that start with the text here, one character at a time.
    let [low, high] = [0, sorted.length];
    let length = 0;
    while (at + length < text.length) {
      const next = text.slice(at, at + length + 1);
      const [l, h] = [lowerBound(sorted, next, low, high), upperBound(sorted, next, low, high)];
      if (l >= h) break;
      [low, high, length] = [l, h, length + 1];
    }
    if (length < CUT_SECRET) continue;
    out += `${text.slice(from, at)}${sorted[low]![1]}`;
    from = at + length;
  }
  return out + text.slice(from);
}

/** The first secret in [low, high) not before `prefix`. */
function lowerBound(sorted: Known, prefix: string, low: number, high: number): number {
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]![0] < prefix) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The first secret in [low, high) that neither starts with `prefix` nor comes before it. */
function upperBound(sorted: Known, prefix: string, low: number, high: number): number {
  while (low < high) {
    const mid = (low + high) >>> 1;
    const value = sorted[mid]![0];
    if (value < prefix || value.startsWith(prefix)) low = mid + 1;
    else high = mid;
  }
  return low;
}
