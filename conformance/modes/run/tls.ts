/**
 * The certificate the suite's receiver serves with `--receiver-tls`: a server certificate
 * made at start for the receiver's host, signed by the suite's own CA. The CA lives in the
 * report directory (`receiver-ca.pem`, its key `receiver-ca-key.pem` readable by the owner
 * only) and is reused while it has a week left, so a target's test deployment can be set
 * to trust that one file once (Node: NODE_EXTRA_CA_CERTS=<dir>/receiver-ca.pem).
 *
 * The certificates are made with selfsigned, an optional peer dependency of the package:
 * with its X.509 libraries it would be nearly half of an install of the suite, and most
 * users serve no TLS. Without it, `--receiver-tls` stops the run at setup (exit 2) naming
 * the command that installs it.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';
import { SetupError } from '../../core/outcome.ts';

export interface ReceiverTls {
  /** The file of the CA certificate the target must trust. */
  caFile: string;
  cert: string;
  key: string;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * The command that installs selfsigned at the version the package's peerDependencies name,
 * read from its package.json, so the message cannot drift from what npm would accept.
 */
function selfsignedInstallCommand(): string {
  const { peerDependencies } = createRequire(import.meta.url)('@payment-service/conformance/package.json') as {
    peerDependencies?: Record<string, string>;
  };
  return `npm install -D selfsigned@${peerDependencies?.selfsigned ?? 'latest'}`;
}

// Loaded when a certificate is made: the heaviest import of the suite, and most runs serve
// no TLS, so every other start is spared it.
async function loadSelfsigned(): Promise<typeof import('selfsigned')> {
  try {
    return await import('selfsigned');
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'ERR_MODULE_NOT_FOUND' && message.includes("'selfsigned'"))
      throw new SetupError(
        `--receiver-tls makes the receiver's certificate with the package selfsigned, an optional dependency of @payment-service/conformance that is not installed. Install it in the project that runs the suite: ${selfsignedInstallCommand()}`,
      );
    throw error;
  }
}
const generate: typeof import('selfsigned')['generate'] = async (...args) => (await loadSelfsigned()).generate(...args);
const common = { keyType: 'ec' as const, algorithm: 'sha256' };

async function loadOrMakeCa(dir: string): Promise<{ cert: string; key: string; file: string }> {
  const file = path.join(dir, 'receiver-ca.pem');
  const keyFile = path.join(dir, 'receiver-ca-key.pem');
  if (existsSync(file) && existsSync(keyFile)) {
    const cert = readFileSync(file, 'utf8');
    if (Date.parse(new X509Certificate(cert).validTo) > Date.now() + 7 * DAY_MS)
      return { cert, key: readFileSync(keyFile, 'utf8'), file };
  }
  const made = await generate([{ name: 'commonName', value: 'payment-conformance receiver CA' }], {
    ...common,
    notBeforeDate: new Date(Date.now() - 60_000),
    notAfterDate: new Date(Date.now() + 90 * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(keyFile, made.private, { mode: 0o600 });
  writeFileSync(file, made.cert);
  return { cert: made.cert, key: made.private, file };
}

export async function receiverTls(dir: string, hosts: readonly string[]): Promise<ReceiverTls> {
  // Before a CA is read or written: without the library there is nothing to serve with.
  await loadSelfsigned();
  const ca = await loadOrMakeCa(dir);
  const names = [...new Set(['localhost', '127.0.0.1', '::1', ...hosts.filter(Boolean)])];
  const server = await generate([{ name: 'commonName', value: names[0]! }], {
    ...common,
    notBeforeDate: new Date(Date.now() - 60_000),
    notAfterDate: new Date(Date.now() + DAY_MS),
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: names.map((name) =>
          isIP(name) ? { type: 7 as const, ip: name } : { type: 2 as const, value: name },
        ),
      },
    ],
  });
  return { caFile: ca.file, cert: server.cert, key: server.private };
}
