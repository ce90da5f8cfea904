//! Building a schedule: the ordering graph of systems and sets, cycle
//! detection, stages, conflict edges, exclusive segments and the ambiguity
//! report.
//!
//! Each set that something names becomes two virtual nodes, `start` and
//! `end`, with `start -> member -> end` for every member (a system, or a
//! nested set's own `start`/`end`) and `start -> end`. `A before B` is
//! `end(A) -> start(B)` (a system stands for itself). So orderings pass
//! through sets, empty ones included, and a cycle anywhere, memberships
//! included, is found by one topological sort.

use std::collections::{BinaryHeap, HashMap};

use super::config::SystemConfig;
use super::set::SetKey;
use super::{Ambiguity, ScheduleError, SetEntry};
use crate::system::{AccessConflict, SystemAccess};
use crate::world::World;

/// What a build produces for the executor.
#[derive(Default)]
pub(crate) struct Built {
    /// Groups of systems that may run at the same time (for inspection).
    pub(crate) stages: Vec<Vec<usize>>,
    /// Successors of each system inside its segment: explicit order plus
    /// conflict edges.
    pub(crate) successors: Vec<Vec<usize>>,
    /// Predecessor count of each system inside its segment.
    pub(crate) predecessors: Vec<usize>,
    /// The run split at exclusive systems.
    pub(crate) segments: Vec<Segment>,
    /// For each system, the sets it is in (transitively) that have run
    /// conditions, as indices into the schedule's set table.
    pub(crate) set_conditions_of: Vec<Vec<usize>>,
    /// Sets with run conditions.
    pub(crate) conditioned_sets: Vec<usize>,
    /// The conflicting pairs with no order between them, ordered by the
    /// systems' indices; described on demand (a schedule of `n` unordered
    /// systems that all conflict has `n^2 / 2`).
    pub(crate) ambiguous_pairs: Vec<AmbiguousPair>,
    /// [`Built::ambiguous_pairs`] described, once asked for.
    pub(crate) ambiguities: std::sync::OnceLock<Vec<Ambiguity>>,
}

/// A conflicting pair with no order between them: the system that runs
/// first, the other, and what they both touch.
#[derive(Clone, Copy)]
pub(crate) struct AmbiguousPair {
    pub(crate) first: u32,
    pub(crate) second: u32,
    pub(crate) conflict: PairConflict,
}

/// What an ambiguous pair both touch, with the names its description needs.
#[derive(Clone, Copy)]
pub(crate) enum PairConflict {
    /// This system (of the pair) is exclusive.
    Exclusive(u32),
    /// A component or resource, with the component's type name (empty for
    /// a resource, which names itself).
    Access(AccessConflict, &'static str),
}

impl AmbiguousPair {
    /// The pair in words, with the systems' names from `configs`.
    pub(crate) fn describe(&self, configs: &[SystemConfig]) -> Ambiguity {
        let name = |i: u32| configs[i as usize].system.meta().name.clone();
        let conflict = match self.conflict {
            PairConflict::Exclusive(i) => format!("{} is exclusive (uses the whole world)", name(i)),
            PairConflict::Access(conflict, component) => conflict.describe_with(|_| component),
        };
        Ambiguity { first: name(self.first), second: name(self.second), conflict }
    }
}

/// Systems that run between two exclusive systems (or the ends of the run),
/// then the exclusive system after them.
#[derive(Default)]
pub(crate) struct Segment {
    /// The segment's systems in a topological order.
    pub(crate) order: Vec<usize>,
    /// Those without a predecessor inside the segment.
    pub(crate) roots: Vec<usize>,
    /// Whether no two of them may run at once (run in order on the calling
    /// thread).
    pub(crate) sequential: bool,
    /// The exclusive system that ends the segment.
    pub(crate) exclusive: Option<usize>,
}

/// The ordering graph over systems (nodes `0..n`) and set boundaries.
struct Graph {
    n: usize,
    /// Set keys with virtual nodes; key `k` owns nodes `n + 2k` (start)
    /// and `n + 2k + 1` (end).
    keys: Vec<SetKey>,
    key_index: HashMap<SetKey, usize>,
    succ: Vec<Vec<usize>>,
}

impl Graph {
    fn vnode(&mut self, key: &SetKey) -> (usize, usize) {
        let k = match self.key_index.get(key) {
            Some(&k) => k,
            None => {
                let k = self.keys.len();
                self.keys.push(key.clone());
                self.key_index.insert(key.clone(), k);
                self.succ.push(Vec::new());
                self.succ.push(Vec::new());
                let (start, end) = (self.n + 2 * k, self.n + 2 * k + 1);
                self.succ[start].push(end);
                k
            }
        };
        (self.n + 2 * k, self.n + 2 * k + 1)
    }

    fn edge(&mut self, from: usize, to: usize) {
        self.succ[from].push(to);
    }

    fn name(&self, node: usize, configs: &[SystemConfig]) -> String {
        if node < self.n {
            return configs[node].system.meta().name.clone();
        }
        match &self.keys[(node - self.n) / 2] {
            // The systems of one type: named as the system (folded into it).
            SetKey::SystemType(_, name) => name.to_string(),
            key => key.describe(),
        }
    }
}

/// Where a target of `before`/`after` resolves to: one system, or a set's
/// (start, end) nodes.
enum Target {
    System(usize),
    Set(usize, usize),
}

pub(crate) fn build(
    configs: &mut [SystemConfig],
    sets: &mut [SetEntry],
    world: &mut World,
) -> Result<Built, ScheduleError> {
    let n = configs.len();
    for config in configs.iter_mut() {
        config.system.initialize(world);
        if let Some(error) = &config.system.meta().error {
            return Err(ScheduleError::Conflict(error.clone()));
        }
        for condition in &mut config.conditions {
            condition.initialize(world).map_err(ScheduleError::Conflict)?;
        }
    }
    for set in sets.iter_mut() {
        for condition in set.conditions.get_mut().unwrap_or_else(|e| e.into_inner()) {
            condition.initialize(world).map_err(ScheduleError::Conflict)?;
        }
    }
    let exclusive: Vec<bool> = configs.iter().map(|c| c.system.is_exclusive()).collect();
    let by_uid: HashMap<u64, usize> = configs.iter().enumerate().map(|(i, c)| (c.uid, i)).collect();
    let mut graph = Graph { n, keys: Vec::new(), key_index: HashMap::new(), succ: vec![Vec::new(); n] };

    // Ordering constraints. A system type that is named but absent is an
    // error (as it always was); an empty named set is not.
    let resolve = |graph: &mut Graph, key: &SetKey, who: &dyn Fn() -> String| -> Result<Option<Target>, _> {
        match key {
            SetKey::Node(uid) => Ok(by_uid.get(uid).map(|&i| Target::System(i))),
            SetKey::SystemType(id, name) => {
                if !configs.iter().any(|c| c.label.id == *id) {
                    return Err(ScheduleError::UnknownSystem { system: who(), target: name });
                }
                let (s, e) = graph.vnode(key);
                Ok(Some(Target::Set(s, e)))
            }
            _ => {
                let (s, e) = graph.vnode(key);
                Ok(Some(Target::Set(s, e)))
            }
        }
    };
    for (i, config) in configs.iter().enumerate() {
        let who = || config.system.meta().name.clone();
        for key in &config.before {
            match resolve(&mut graph, key, &who)? {
                Some(Target::System(j)) => graph.edge(i, j),
                Some(Target::Set(start, _)) => graph.edge(i, start),
                None => {}
            }
        }
        for key in &config.after {
            match resolve(&mut graph, key, &who)? {
                Some(Target::System(j)) => graph.edge(j, i),
                Some(Target::Set(_, end)) => graph.edge(end, i),
                None => {}
            }
        }
    }
    for set in sets.iter() {
        let (start, end) = graph.vnode(&set.key);
        let who = || set.key.describe();
        for key in &set.before {
            match resolve(&mut graph, key, &who)? {
                Some(Target::System(j)) => graph.edge(end, j),
                Some(Target::Set(s, _)) => graph.edge(end, s),
                None => {}
            }
        }
        for key in &set.after {
            match resolve(&mut graph, key, &who)? {
                Some(Target::System(j)) => graph.edge(j, start),
                Some(Target::Set(_, e)) => graph.edge(e, start),
                None => {}
            }
        }
        for parent in &set.parents {
            let (ps, pe) = graph.vnode(parent);
            graph.edge(ps, start);
            graph.edge(end, pe);
        }
    }
    // Memberships: named and unnamed sets, and the system-type sets that
    // some constraint names.
    for (i, config) in configs.iter().enumerate() {
        for key in &config.sets {
            let (start, end) = graph.vnode(key);
            graph.edge(start, i);
            graph.edge(i, end);
        }
        let type_key = SetKey::SystemType(config.label.id, config.label.name);
        if graph.key_index.contains_key(&type_key) {
            let (start, end) = graph.vnode(&type_key);
            graph.edge(start, i);
            graph.edge(i, end);
        }
    }

    let order = topological_order(&graph, configs)?;

    // System-level explicit successors: systems reached through set nodes
    // only.
    let total = graph.succ.len();
    let mut explicit: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut seen = vec![usize::MAX; total];
    let mut stack = Vec::new();
    for (i, out) in explicit.iter_mut().enumerate() {
        stack.extend(graph.succ[i].iter().copied());
        while let Some(node) = stack.pop() {
            if seen[node] == i {
                continue;
            }
            seen[node] = i;
            if node < n {
                out.push(node);
            } else {
                stack.extend(graph.succ[node].iter().copied());
            }
        }
    }
    // Reachability over explicit edges (for the ambiguity report), as bit
    // rows, filled in reverse topological order.
    let words = n.div_ceil(64);
    let mut reach = vec![0u64; n * words];
    for &i in order.iter().rev() {
        for &j in &explicit[i] {
            absorb_row(&mut reach, words, i, j);
        }
    }
    let reaches = |a: usize, b: usize| has_bit(&reach, words, a, b);

    // Each system's sets, transitively (for set conditions and
    // `ambiguous_with`).
    let set_index: HashMap<SetKey, usize> = sets.iter().enumerate().map(|(k, s)| (s.key.clone(), k)).collect();
    let mut member_of: Vec<Vec<SetKey>> = Vec::with_capacity(n);
    for config in configs.iter() {
        let mut all: Vec<SetKey> =
            vec![SetKey::SystemType(config.label.id, config.label.name), SetKey::Node(config.uid)];
        let mut todo: Vec<SetKey> = config.sets.clone();
        while let Some(key) = todo.pop() {
            if all.contains(&key) {
                continue;
            }
            if let Some(&k) = set_index.get(&key) {
                todo.extend(sets[k].parents.iter().cloned());
            }
            all.push(key);
        }
        member_of.push(all);
    }
    let conditioned_sets: Vec<usize> = (0..sets.len())
        .filter(|&k| !sets[k].conditions.get_mut().unwrap_or_else(|e| e.into_inner()).is_empty())
        .collect();
    let set_conditions_of: Vec<Vec<usize>> = member_of
        .iter()
        .map(|keys| {
            keys.iter().filter_map(|key| set_index.get(key).copied()).filter(|k| conditioned_sets.contains(k)).collect()
        })
        .collect();

    // What each system holds while it runs: its own access and that of the
    // conditions evaluated right before it.
    let access: Vec<SystemAccess> = (0..n)
        .map(|i| {
            let mut access = configs[i].system.meta().access.clone();
            for condition in &configs[i].conditions {
                condition.access(&mut access);
            }
            for &k in &set_conditions_of[i] {
                for condition in sets[k].conditions.get_mut().unwrap_or_else(|e| e.into_inner()).iter() {
                    condition.access(&mut access);
                }
            }
            access
        })
        .collect();
    // Whether two systems conflict, and on what: without allocating, as
    // the build tests every pair.
    let conflict_of = |a: usize, b: usize| -> Option<PairConflict> {
        if exclusive[a] || exclusive[b] {
            return Some(PairConflict::Exclusive(if exclusive[a] { a } else { b } as u32));
        }
        let conflict = access[a].first_conflict(&access[b])?;
        let component = match conflict {
            AccessConflict::Component(id, _) => world.components().info(id).name(),
            AccessConflict::Resource(_) => "",
        };
        Some(PairConflict::Access(conflict, component))
    };

    // Stage packing (for inspection).
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, out) in explicit.iter().enumerate() {
        for &j in out {
            preds[j].push(i);
        }
    }
    let mut stage_of = vec![0usize; n];
    let mut stages: Vec<Vec<usize>> = Vec::new();
    for &i in &order {
        let earliest = preds[i].iter().map(|&p| stage_of[p] + 1).max().unwrap_or(0);
        let stage = (earliest..stages.len())
            .find(|&s| stages[s].iter().all(|&j| conflict_of(i, j).is_none()))
            .unwrap_or(stages.len());
        if stage == stages.len() {
            stages.push(Vec::new());
        }
        stages[stage].push(i);
        stage_of[i] = stage;
    }
    for stage in &mut stages {
        stage.sort_unstable();
    }

    // Dependency graph: explicit successors, plus the conflicting pairs
    // ordered in topological (then insertion) order; a conflicting pair
    // with no explicit order is an ambiguity. A conflicting pair already
    // ordered through the edges so far gets no edge of its own (`before`
    // holds, per system, every system with a path to it), so `n` systems
    // that all conflict make a chain of `n - 1` edges for the executor to
    // count down, not `n^2 / 2`.
    let accepted = |a: usize, b: usize| {
        configs[a].ambiguous_with.iter().any(|key| member_of[b].contains(key))
            || configs[b].ambiguous_with.iter().any(|key| member_of[a].contains(key))
    };
    let mut explicit_preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, out) in explicit.iter().enumerate() {
        for &j in out {
            explicit_preds[j].push(i);
        }
    }
    let mut successors = explicit;
    let mut before = vec![0u64; n * words];
    let mut ambiguous_pairs = Vec::new();
    for (k, &b) in order.iter().enumerate() {
        for &p in &explicit_preds[b] {
            absorb_row(&mut before, words, b, p);
        }
        // The latest conflicting systems first: an edge from one of them
        // orders most of the earlier ones too.
        for &a in order[..k].iter().rev() {
            let Some(conflict) = conflict_of(a, b) else { continue };
            if !reaches(a, b) && !accepted(a, b) {
                // First the earlier in topological order.
                ambiguous_pairs.push(AmbiguousPair { first: a as u32, second: b as u32, conflict });
            }
            if !has_bit(&before, words, b, a) {
                successors[a].push(b);
                absorb_row(&mut before, words, b, a);
            }
        }
    }

    // Listed in the order the systems were added.
    ambiguous_pairs.sort_unstable_by_key(|p: &AmbiguousPair| (p.first.min(p.second), p.first.max(p.second)));

    // Segments: every system is ordered against each exclusive system (it
    // conflicts with all), so the exclusive systems cut the topological
    // order into runs that never overlap.
    let mut segment_of = vec![0usize; n];
    let mut segments = vec![Segment::default()];
    for &i in &order {
        let current = segments.len() - 1;
        if exclusive[i] {
            segments[current].exclusive = Some(i);
            segments.push(Segment::default());
        } else {
            segment_of[i] = current;
            segments[current].order.push(i);
        }
    }
    if segments.len() > 1 && segments.last().is_some_and(|s| s.order.is_empty()) {
        segments.pop();
    }
    for (i, list) in successors.iter_mut().enumerate() {
        if exclusive[i] {
            list.clear();
        } else {
            list.retain(|&j| !exclusive[j] && segment_of[j] == segment_of[i]);
        }
    }
    let mut predecessors = vec![0usize; n];
    for list in &successors {
        for &b in list {
            predecessors[b] += 1;
        }
    }
    for (s, segment) in segments.iter_mut().enumerate() {
        segment.roots = segment.order.iter().copied().filter(|&i| predecessors[i] == 0).collect();
        let in_segment = |i: usize| !exclusive[i] && segment_of[i] == s;
        segment.sequential = stages.iter().all(|stage| stage.iter().filter(|&&i| in_segment(i)).count() <= 1);
    }

    Ok(Built {
        stages,
        successors,
        predecessors,
        segments,
        set_conditions_of,
        conditioned_sets,
        ambiguous_pairs,
        ambiguities: std::sync::OnceLock::new(),
    })
}

/// Sets bit `from` and every bit of row `from` in row `to` of a bit
/// matrix of `words` words a row: what reaches `from` (or what `from`
/// reaches) joins `to`'s row.
fn absorb_row(rows: &mut [u64], words: usize, to: usize, from: usize) {
    rows[to * words + from / 64] |= 1 << (from % 64);
    for w in 0..words {
        rows[to * words + w] |= rows[from * words + w];
    }
}

/// Whether bit `bit` of row `row` is set.
fn has_bit(rows: &[u64], words: usize, row: usize, bit: usize) -> bool {
    rows[row * words + bit / 64] & (1 << (bit % 64)) != 0
}

/// Kahn's algorithm over systems and set nodes: set nodes as soon as they
/// are ready, systems in the order they were added. A cycle is an error
/// naming the systems and sets on it, in order.
fn topological_order(graph: &Graph, configs: &[SystemConfig]) -> Result<Vec<usize>, ScheduleError> {
    let n = graph.n;
    let total = graph.succ.len();
    let mut indegree = vec![0usize; total];
    for list in &graph.succ {
        for &j in list {
            indegree[j] += 1;
        }
    }
    // Min-heap on (is a system, index): set nodes first.
    let mut ready: BinaryHeap<std::cmp::Reverse<(bool, usize)>> =
        (0..total).filter(|&v| indegree[v] == 0).map(|v| std::cmp::Reverse((v < n, v))).collect();
    let mut order = Vec::with_capacity(n);
    let mut done = 0;
    while let Some(std::cmp::Reverse((_, v))) = ready.pop() {
        done += 1;
        if v < n {
            order.push(v);
        }
        for &w in &graph.succ[v] {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(std::cmp::Reverse((w < n, w)));
            }
        }
    }
    if done == total {
        return Ok(order);
    }
    // Every node left has a predecessor that is left: walk predecessors
    // until one repeats.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); total];
    for (v, list) in graph.succ.iter().enumerate() {
        for &w in list {
            if indegree[v] > 0 && indegree[w] > 0 {
                preds[w].push(v);
            }
        }
    }
    let start = (0..total).find(|&v| indegree[v] > 0).expect("a node is left");
    let mut path = vec![start];
    let mut at = vec![usize::MAX; total];
    at[start] = 0;
    let cycle = loop {
        let v = *path.last().expect("non-empty");
        let p = preds[v][0];
        if at[p] != usize::MAX {
            let mut cycle: Vec<usize> = path[at[p]..].to_vec();
            cycle.reverse(); // predecessors were walked: forward order
            break cycle;
        }
        at[p] = path.len();
        path.push(p);
    };
    // Name the nodes, starting at a system when there is one, and fold a
    // set's start and end into one mention.
    let first = cycle.iter().position(|&v| v < n).unwrap_or(0);
    let mut names: Vec<String> = Vec::new();
    for k in 0..cycle.len() {
        let name = graph.name(cycle[(first + k) % cycle.len()], configs);
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    if names.len() > 1 && names.first() == names.last() {
        names.pop();
    }
    Err(ScheduleError::Cycle(names))
}
