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

export class Redactor {
  private readonly secrets = new Map<string, Placeholder>();

  constructor(private readonly sandboxToken?: string) {
    this.remember(sandboxToken, '$SANDBOX_TOKEN');
  }

  /** Remembers a secret value, so that it is replaced wherever it appears. */
  remember(value: unknown, placeholder: Placeholder): void {
    if (typeof value === 'string' && value.length >= 6 && !this.secrets.has(value))
      this.secrets.set(value, placeholder);
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
    for (const [key, placeholder] of Object.entries(SECRET_FIELDS)) {
      out = out.replace(new RegExp(`("${key}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'g'), `$1"${placeholder}"`);
      // A form field's value ends at the next field, space or quote.
      out = out.replace(new RegExp(`((?:^|[&?\\s])${key}=)[^&\\s"']*`, 'g'), `$1${placeholder}`);
    }
    // Longest first, so that a secret containing another is replaced whole.
    const known = [...this.secrets].sort((a, b) => b[0].length - a[0].length);
    for (const [value, placeholder] of known) out = out.split(value).join(placeholder);
    // Then what is left of one cut short: a text made before the secret was known, and cut
    // since, holds its start only.
    for (const [value, placeholder] of known)
      if (value.length > CUT_SECRET) out = withoutStart(out, value, placeholder);
    return out;
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
