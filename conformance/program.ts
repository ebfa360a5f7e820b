/**
 * The `payment-conformance` command line, built from the command records (commands.ts):
 * `run` checks an implementation at a base URL, `receiver` a merchant's webhook receiver,
 * `client` an API client, `replay` runs the failed checks of a report again, `repro` one
 * check of a report beside its recording, `list` prints
 * every check. Exit status: 0 every must check passed, 1 a must check failed, 2 usage or
 * setup error. The bin (cli.ts) only calls `main`; the package's README lists the flags from here.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { COMMANDS } from './commands.ts';
import { SetupError } from './core/outcome.ts';
import { TOOL_VERSION } from './core/version.ts';
import { shellWord } from './core/http.ts';
import { type CommandRecord, type Flag, RUN_SHAPE_FLAGS } from './runner/mode.ts';

const write = (text: string) => void process.stdout.write(text);

/** The target's flags given on the command line, as a shell line with every secret as its shell variable. */
function targetFlagsOf(command: Command, flags: readonly Flag[]): string {
  const values = command.opts();
  return flags
    .flatMap((flag) => {
      const option = command.options.find((o) => o.flags === flag.flags);
      if (!option?.long) return [];
      const name = option.attributeName();
      if (RUN_SHAPE_FLAGS.has(name) || command.getOptionValueSource(name) !== 'cli') return [];
      const value = values[name];
      if (value === true) return [option.long];
      return [`${option.long} ${flag.secret ? `"${flag.secret}"` : shellWord(String(value))}`];
    })
    .join(' ');
}

function optionOf(flag: Flag): Option {
  const option = new Option(flag.flags, flag.description);
  const parse = flag.parse;
  if (parse)
    option.argParser((value: string) => {
      try {
        return parse(value);
      } catch (error) {
        // Commander names the flag and the value, and makes it a usage error.
        throw new InvalidArgumentError((error as Error).message);
      }
    });
  if (flag.default !== undefined) option.default(flag.default);
  if (flag.required) option.makeOptionMandatory();
  return option;
}

/** The command of a record, under its group's command when it has one (`adapter init`). */
function addCommand(program: Command, record: CommandRecord<never>, setExit: (code: number) => void): void {
  const parent = record.group
    ? (program.commands.find((c) => c.name() === record.group!.name) ??
      program.command(record.group.name).description(record.group.description))
    : program;
  const command = parent.command(record.name).description(record.description);
  for (const argument of record.arguments ?? []) command.argument(`<${argument.name}>`, argument.description);
  for (const flag of record.flags) command.addOption(optionOf(flag));
  command.action(async (...given: unknown[]) => {
    const args = given.slice(0, record.arguments?.length ?? 0) as string[];
    setExit(
      await record.run(command.opts() as never, {
        args,
        isDefault: (name) => command.getOptionValueSource(name) === 'default',
        out: { write, verbose: command.opts().verbose === true },
        targetFlags: targetFlagsOf(command, record.flags),
      }),
    );
  });
}

export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('payment-conformance')
    .description(
      'Checks an implementation of the payment service, or a merchant webhook receiver, against the service document.',
    )
    .version(TOOL_VERSION, '--version', 'print the version of payment-conformance')
    .exitOverride()
    .showHelpAfterError();
  for (const record of COMMANDS) addCommand(program, record, setExit);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end "successfully"; anything else is a usage error.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof SetupError) {
      process.stderr.write(`payment-conformance: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`payment-conformance: ${(error as Error).stack ?? String(error)}\n`);
    return 2;
  }
}
