/**
 * `--adapter <module>`: an ES module whose default export is an adapter, or a factory
 * `({ baseUrl }) => adapter` (sync or async). What it declares is checked before the run:
 * only known capabilities, each with its method.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CAPABILITIES, CAPABILITY_METHODS, type Capability, type TargetAdapter } from '../core/adapter.ts';
import { SetupError } from '../core/outcome.ts';
import type { TrafficEntry } from '../core/traffic.ts';
import { sandboxAdapter } from './sandbox.ts';

/** A module given on the command line: a file, or a package name resolved from `cwd` as the user's own code would. */
export function moduleUrl(spec: string, cwd: string, flag = '--adapter'): string {
  const file = path.resolve(cwd, spec);
  if (existsSync(file)) return pathToFileURL(file).href;
  try {
    return pathToFileURL(createRequire(path.join(cwd, 'package.json')).resolve(spec)).href;
  } catch {
    throw new SetupError(`${flag} ${spec}: no such file or package (from ${cwd}).`);
  }
}

export function checkAdapter(adapter: unknown, where: string): TargetAdapter {
  if (!adapter || typeof adapter !== 'object') {
    throw new SetupError(`${where}: the default export must be an adapter or a function returning one.`);
  }
  const declared = (adapter as { capabilities?: unknown }).capabilities;
  if (!Array.isArray(declared)) throw new SetupError(`${where}: the adapter has no capabilities array.`);
  const unknown = declared.filter((c) => !(CAPABILITIES as readonly unknown[]).includes(c));
  if (unknown.length > 0) {
    throw new SetupError(`${where}: unknown capabilities ${unknown.join(', ')} (known: ${CAPABILITIES.join(', ')}).`);
  }
  const lacking = (declared as Capability[]).flatMap((c) =>
    CAPABILITY_METHODS[c]
      .filter((m) => typeof (adapter as Record<string, unknown>)[m] !== 'function')
      .map((m) => (m === c ? c : `${c} (${m})`)),
  );
  if (lacking.length > 0) {
    throw new SetupError(`${where}: declares ${lacking.join(', ')} without a method of that name.`);
  }
  return adapter as TargetAdapter;
}

export async function loadAdapter(spec: string, baseUrl: string, cwd = process.cwd()): Promise<TargetAdapter> {
  const url = moduleUrl(spec, cwd);
  let loaded: { default?: unknown };
  try {
    loaded = (await import(url)) as { default?: unknown };
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new SetupError(
        `--adapter ${spec}: this Node cannot load TypeScript by itself; compile it (tsc), or run the suite as node --import tsx node_modules/@payment-service/conformance/bin/payment-conformance.js run ...`,
      );
    }
    throw new SetupError(`--adapter ${spec}: the module failed to load: ${e.message}`);
  }
  let adapter = loaded.default;
  if (typeof adapter === 'function') {
    try {
      adapter = await (adapter as (context: { baseUrl: string }) => unknown)({ baseUrl });
    } catch (error) {
      throw new SetupError(`--adapter ${spec}: the factory threw: ${(error as Error).message}`);
    }
  }
  return checkAdapter(adapter, `--adapter ${spec}`);
}

/** --base-url, without its trailing slashes; a usage error when it is not an absolute URL. */
export function baseUrlOf(text: string): string {
  try {
    return new URL(text).toString().replace(/\/+$/, '');
  } catch {
    throw new SetupError(`--base-url ${text} is not an absolute URL.`);
  }
}

/**
 * The adapter --sandbox-token or --adapter names (a module path or package, or an adapter
 * given to the library), and how reports name it; undefined when neither is given.
 */
export async function targetAdapter(
  options: { sandboxToken?: string | undefined; adapter?: string | TargetAdapter | undefined },
  baseUrl: string,
  /** The built-in sandbox adapter's calls, for the traffic reports. */
  record?: (entry: TrafficEntry) => void,
): Promise<{ adapter: TargetAdapter; name: string } | undefined> {
  if (options.adapter !== undefined && options.sandboxToken !== undefined)
    throw new SetupError('--adapter and --sandbox-token both name the way to the target: give one.');
  if (options.sandboxToken !== undefined)
    return {
      adapter: sandboxAdapter({ baseUrl, token: options.sandboxToken, ...(record ? { record } : {}) }),
      name: 'sandbox',
    };
  if (typeof options.adapter === 'string')
    return { adapter: await loadAdapter(options.adapter, baseUrl), name: options.adapter };
  if (options.adapter !== undefined) return { adapter: checkAdapter(options.adapter, 'adapter'), name: 'adapter' };
  return undefined;
}
