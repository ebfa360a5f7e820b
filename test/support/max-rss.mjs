// Loaded with `node --import` before a command: prints the process's peak resident memory
// (its own threads included) on standard error when it ends, for the memory bounds' tests.
process.on('exit', () => process.stderr.write(`max-rss-kb ${process.resourceUsage().maxRSS}\n`));
