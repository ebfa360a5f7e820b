/**
 * `npm run lint:plan`: the structure of each package drawn from its own imports. Every
 * folder's entries (its files and its sub-folders) are its rooms; an arrow runs from one
 * room to another when a file in the first imports a file in the second. A folder is sound
 * when its rooms' arrows form no circle: then its rooms stand on floors, each importing only
 * the floors below, and no import runs back up. This holds the rule at every folder of every
 * package (`--check`, part of `npm test`) and prints, for the top of each package, its rooms,
 * floors and the imports that run back up (those a layering against the fewest imports
 * leaves pointing upwards).
 */
import { execFileSync } from 'node:child_process';

const PACKAGES = ['conformance', 'server', 'client', 'generated'];

interface Cruised {
  modules: { source: string; dependencies: { resolved: string }[] }[];
}

function cruise(): Cruised {
  const json = execFileSync(
    'npx',
    ['depcruise', ...PACKAGES, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  return JSON.parse(json) as Cruised;
}

/** A source file of a package (not its build output, its tests or its declarations). */
function isSource(file: string): boolean {
  return /\.ts$/.test(file) && !/\.d\.ts$|\.test\.ts$/.test(file) && !/(^|\/)(dist|node_modules)\//.test(file);
}

/** The room of `file` among the entries of `folder`: the file itself, or the sub-folder holding it. */
function roomOf(folder: string, file: string): string | undefined {
  if (!file.startsWith(`${folder}/`)) return undefined;
  const rest = file.slice(folder.length + 1);
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : `${rest.slice(0, slash)}/`;
}

interface Arrow {
  from: string;
  to: string;
  /** The file imports it stands for: "a.ts -> b/c.ts". */
  imports: string[];
}

interface Plan {
  folder: string;
  rooms: string[];
  arrows: Arrow[];
  /** The rooms' floors, 1 for a room importing no other; a circle shares one floor. */
  floors: Map<string, number>;
  /** File imports running against the layering that leaves the fewest of them upwards. */
  backUp: string[];
}

/** Tarjan's strongly connected components: a component of more than one room is a circle. */
function components(rooms: string[], next: Map<string, Set<string>>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    order.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      found.push(component);
    }
  };
  for (const room of rooms) if (!order.has(room)) visit(room);
  return found;
}

/**
 * The order of a circle's rooms, lowest first, that leaves the fewest file imports pointing
 * upwards: exact for the small circles a package has (dynamic programming over subsets).
 */
function bestOrder(rooms: string[], weight: (from: string, to: string) => number): string[] {
  if (rooms.length > 16) return rooms;
  const n = rooms.length;
  const cost = new Array<number>(1 << n).fill(Number.POSITIVE_INFINITY);
  const choice = new Array<number>(1 << n).fill(-1);
  cost[0] = 0;
  for (let set = 0; set < 1 << n; set++) {
    if (cost[set] === Number.POSITIVE_INFINITY) continue;
    for (let i = 0; i < n; i++) {
      if (set & (1 << i)) continue;
      // Room i goes on top of `set`: its imports into rooms not yet placed will run upwards.
      let up = 0;
      for (let j = 0; j < n; j++) if (j !== i && !(set & (1 << j))) up += weight(rooms[i]!, rooms[j]!);
      const next = set | (1 << i);
      if (cost[set]! + up < cost[next]!) {
        cost[next] = cost[set]! + up;
        choice[next] = i;
      }
    }
  }
  const order: string[] = [];
  for (let set = (1 << n) - 1; set !== 0; set &= ~(1 << choice[set]!)) order.unshift(rooms[choice[set]!]!);
  return order;
}

function planOf(folder: string, files: string[], imports: [string, string][]): Plan {
  const rooms = [...new Set(files.map((f) => roomOf(folder, f)!).filter(Boolean))].sort();
  const byPair = new Map<string, Arrow>();
  for (const [from, to] of imports) {
    const a = roomOf(folder, from);
    const b = roomOf(folder, to);
    if (!a || !b || a === b) continue;
    const key = `${a}\0${b}`;
    const arrow = byPair.get(key) ?? { from: a, to: b, imports: [] };
    arrow.imports.push(`${from.slice(folder.length + 1)} -> ${to.slice(folder.length + 1)}`);
    byPair.set(key, arrow);
  }
  const arrows = [...byPair.values()];
  const next = new Map<string, Set<string>>();
  for (const a of arrows) next.set(a.from, (next.get(a.from) ?? new Set()).add(a.to));
  const weight = (from: string, to: string) => byPair.get(`${from}\0${to}`)?.imports.length ?? 0;
  // Tarjan's components come out lowest first (a component after everything it imports).
  const found = components(rooms, next);
  const floors = new Map<string, number>();
  const backUp: string[] = [];
  for (const component of found) {
    const inside = new Set(component);
    let floor = 1;
    for (const room of component)
      for (const to of next.get(room) ?? []) if (!inside.has(to)) floor = Math.max(floor, floors.get(to)! + 1);
    for (const room of component) floors.set(room, floor);
    if (component.length === 1) continue;
    const order = bestOrder(component, weight);
    for (const [i, from] of order.entries())
      for (const to of order.slice(i + 1)) backUp.push(...(byPair.get(`${from}\0${to}`)?.imports ?? []));
  }
  return { folder, rooms, arrows, floors, backUp };
}

const check = process.argv.includes('--check');
const cruised = cruise();
const files = cruised.modules.map((m) => m.source).filter(isSource);
const imports: [string, string][] = cruised.modules
  .filter((m) => isSource(m.source))
  .flatMap((m) =>
    m.dependencies.filter((d) => isSource(d.resolved)).map((d): [string, string] => [m.source, d.resolved]),
  );

const folders = [
  ...new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  ),
]
  .filter((f) => PACKAGES.includes(f.split('/')[0]!))
  .sort();

const problems: string[] = [];
for (const folder of folders) {
  const inside = files.filter((f) => f.startsWith(`${folder}/`));
  const plan = planOf(folder, inside, imports);
  const top = PACKAGES.includes(folder);
  if (top && !check) {
    const floorCount = Math.max(0, ...plan.floors.values());
    const lines = inside.length;
    process.stdout.write(
      `${folder}/: ${plan.rooms.length} rooms on ${floorCount} floors, ${plan.backUp.length} imports running back up (${lines} files)\n`,
    );
    for (let floor = floorCount; floor >= 1; floor--) {
      const here = plan.rooms.filter((r) => plan.floors.get(r) === floor);
      process.stdout.write(`  floor ${floor}: ${here.join(' ')}\n`);
    }
  }
  for (const imp of plan.backUp) problems.push(`${folder}/: ${imp} runs back up`);
  if (!top && !check && plan.backUp.length > 0)
    process.stdout.write(`${folder}/: ${plan.backUp.length} imports running back up\n`);
}
if (!check) for (const p of problems) process.stdout.write(`  ${p}\n`);
if (check) {
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} imports run back up (a folder's rooms import each other in a circle):\n`);
    for (const p of problems) process.stderr.write(`  ${p}\n`);
    process.exit(1);
  }
  process.stdout.write(`no import runs back up in ${folders.length} folders of ${PACKAGES.length} packages\n`);
}
