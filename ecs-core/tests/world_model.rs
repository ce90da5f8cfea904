//! Model-based property test: random sequences of spawn, despawn, insert,
//! remove, write and query, checked after every step against a plain
//! `HashMap` model, including exactly which entities `Changed` and `Added`
//! queries must return.
//!
//! Panic injection: `Bomb` components whose destructor panics when armed,
//! query closures and spawn iterators that panic part-way. After every
//! caught panic the world must still match the model (a structural change
//! completes, rows written before a panic are marked), pass
//! `World::check_consistency`, and every `Bomb` must have been dropped
//! exactly once if it is gone and never if it is alive.

use ecs_core::Component;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use ecs_core::{
    Added, Changed, CommandQueue, DeferredWorld, Entity, On, OnRemove, QueryState, ResMut, StoreError, World,
};
use proptest::prelude::*;

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(i32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(i32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;
/// Has drop glue, so drops are exercised (and checked by the sanitizer run).
#[derive(Component, Debug, Clone, PartialEq)]
struct Name(String);

thread_local! {
    /// Lit before an armed operation: the next `Bomb` dropped panics, once.
    static FUSE: Cell<bool> = const { Cell::new(false) };
    /// How often each bomb was dropped.
    static BOMB_DROPS: RefCell<HashMap<u64, u32>> = RefCell::new(HashMap::new());
}

/// A component whose destructor panics when the fuse is lit; its heap box
/// makes a double drop or a read after drop visible to the sanitizer.
#[derive(Component, Debug)]
struct Bomb(Box<u64>);

impl Drop for Bomb {
    fn drop(&mut self) {
        let id = *self.0;
        BOMB_DROPS.with(|d| *d.borrow_mut().entry(id).or_default() += 1);
        if FUSE.with(|f| f.replace(false)) {
            panic!("bomb {id} went off");
        }
    }
}

/// Runs `f` with the fuse lit (if `armed`), returning whether it panicked.
/// Expected panics are not printed (this binary runs one test).
fn armed_run(armed: bool, f: impl FnOnce()) -> bool {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    FUSE.with(|fuse| fuse.set(armed));
    let panicked = catch_unwind(AssertUnwindSafe(f)).is_err();
    FUSE.with(|fuse| fuse.set(false));
    std::panic::set_hook(hook);
    panicked
}

/// What the `Pos` hooks saw: ('a', entity) on add, ('r', entity) on remove.
#[derive(Default)]
struct HookLog(Vec<(char, Entity)>);
/// What the `OnRemove<Pos>` observer saw.
#[derive(Default)]
struct ObserverLog(Vec<Entity>);

fn pos_added(mut world: DeferredWorld<'_>, entity: Entity) {
    assert!(world.get::<Pos>(entity).is_ok(), "on_add runs after the value is written");
    world.resource_mut::<HookLog>().unwrap().0.push(('a', entity));
}

fn pos_removed(mut world: DeferredWorld<'_>, entity: Entity) {
    assert!(world.get::<Pos>(entity).is_ok(), "on_remove runs before the value goes");
    world.resource_mut::<HookLog>().unwrap().0.push(('r', entity));
}

#[derive(Debug, Clone, Default)]
struct Model {
    pos: Option<i32>,
    pos_changed: u64,
    pos_added: u64,
    vel: Option<i32>,
    tag: bool,
    name: Option<String>,
    bomb: Option<u64>,
}

#[derive(Debug, Clone)]
enum Op {
    Spawn {
        pos: Option<i32>,
        vel: Option<i32>,
        tag: bool,
        name: bool,
        bomb: bool,
    },
    SpawnBatch {
        count: usize,
        pos: i32,
    },
    Despawn(usize),
    InsertPos(usize, i32),
    InsertVel(usize, i32),
    InsertTagName(usize),
    RemovePos(usize),
    RemoveVel(usize),
    RemoveName(usize),
    WritePos(usize, i32),
    SetIfNeqPos(usize, i32),
    QueryMove,
    QueryChanged,
    QueryAdded,
    Tick,
    Stale(usize),
    InsertBomb(usize, bool),
    RemoveBomb(usize, bool),
    DespawnArmed(usize),
    ClearArmed,
    /// A mover loop whose closure panics at the `k`-th row it visits.
    MovePanic(usize),
    /// A spawn batch whose iterator panics after `k` of `count` bundles.
    BatchPanic {
        count: usize,
        k: usize,
        pos: i32,
    },
    /// Commands: despawn one entity, insert `Vel(7)` into another, applied
    /// with the fuse lit (and again after a panic, for the rest).
    CommandsArmed(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let v = -5i32..5;
    prop_oneof![
        3 => (proptest::option::of(v.clone()), proptest::option::of(v.clone()), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(pos, vel, tag, name, bomb)| Op::Spawn { pos, vel, tag, name, bomb }),
        1 => (1usize..400, v.clone()).prop_map(|(count, pos)| Op::SpawnBatch { count, pos }),
        2 => any::<usize>().prop_map(Op::Despawn),
        2 => (any::<usize>(), v.clone()).prop_map(|(i, x)| Op::InsertPos(i, x)),
        2 => (any::<usize>(), v.clone()).prop_map(|(i, x)| Op::InsertVel(i, x)),
        1 => any::<usize>().prop_map(Op::InsertTagName),
        1 => any::<usize>().prop_map(Op::RemovePos),
        1 => any::<usize>().prop_map(Op::RemoveVel),
        1 => any::<usize>().prop_map(Op::RemoveName),
        3 => (any::<usize>(), v.clone()).prop_map(|(i, x)| Op::WritePos(i, x)),
        1 => (any::<usize>(), v).prop_map(|(i, x)| Op::SetIfNeqPos(i, x)),
        2 => Just(Op::QueryMove),
        3 => Just(Op::QueryChanged),
        2 => Just(Op::QueryAdded),
        2 => Just(Op::Tick),
        1 => any::<usize>().prop_map(Op::Stale),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::InsertBomb(i, a)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::RemoveBomb(i, a)),
        2 => any::<usize>().prop_map(Op::DespawnArmed),
        1 => Just(Op::ClearArmed),
        2 => (0usize..300).prop_map(Op::MovePanic),
        1 => (1usize..400, 0usize..400, -5i32..5).prop_map(|(count, k, pos)| Op::BatchPanic { count, k: k % count, pos }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Op::CommandsArmed(i, j)),
    ]
}

struct Harness {
    world: World,
    model: HashMap<Entity, Model>,
    order: Vec<Entity>,
    dead: Vec<Entity>,
    changed: QueryState<Entity, Changed<Pos>>,
    changed_last: u64,
    /// Whether any `Pos` was stamped changed since the `Changed` query ran
    /// (then, and only then, may it visit a chunk).
    pos_stamped: bool,
    added: QueryState<Entity, Added<Pos>>,
    added_last: u64,
    mover: QueryState<(&'static mut Pos, &'static Vel)>,
    mover_with_entity: QueryState<(Entity, &'static mut Pos, &'static Vel)>,
    /// Bombs made so far (ids `0..bombs`).
    bombs: u64,
    /// `OnRemove<Pos>` events the model expects the observer to have seen.
    removed_pos: Vec<Entity>,
    /// Whether the hooks and the observer are registered.
    listen: bool,
}

impl Harness {
    /// `listen`: with `Pos` hooks and an `OnRemove<Pos>` observer (every
    /// operation on `Pos` takes the lifecycle path), or none (the fast path).
    fn new(listen: bool) -> Self {
        let mut world = World::new();
        let changed = world.query_filtered();
        let added = world.query_filtered();
        let mover = world.query();
        let mover_with_entity = world.query();
        world.insert_resource(HookLog::default());
        world.insert_resource(ObserverLog::default());
        if listen {
            world.register_component_hooks::<Pos>().on_add(pos_added).on_remove(pos_removed);
            world.add_observer(|trigger: On<OnRemove<Pos>>, mut log: ResMut<ObserverLog>| {
                log.0.push(trigger.target().expect("lifecycle events have a target"));
            });
        }
        BOMB_DROPS.with(|d| d.borrow_mut().clear());
        Harness {
            world,
            model: HashMap::new(),
            order: Vec::new(),
            dead: Vec::new(),
            changed,
            changed_last: 0,
            pos_stamped: false,
            added,
            added_last: 0,
            mover,
            mover_with_entity,
            bombs: 0,
            removed_pos: Vec::new(),
            listen,
        }
    }

    fn new_bomb(&mut self) -> (Bomb, u64) {
        self.bombs += 1;
        (Bomb(Box::new(self.bombs - 1)), self.bombs - 1)
    }

    fn despawned(&mut self, e: Entity) {
        self.model.remove(&e);
        self.order.retain(|&x| x != e);
        self.dead.push(e);
    }

    fn pick(&self, i: usize) -> Option<Entity> {
        (!self.order.is_empty()).then(|| self.order[i % self.order.len()])
    }

    fn now(&self) -> u64 {
        self.world.change_tick()
    }

    fn spawned(&mut self, e: Entity, m: Model) {
        assert!(self.model.insert(e, m).is_none(), "handle {e} handed out twice");
        self.order.push(e);
    }

    fn apply(&mut self, op: &Op) {
        let now = self.now();
        let before: Vec<(Entity, u64)> = self.model.iter().map(|(&e, m)| (e, m.pos_changed)).collect();
        let had_pos: HashMap<Entity, bool> = self.model.iter().map(|(&e, m)| (e, m.pos.is_some())).collect();
        self.apply_op(op, now);
        self.check_lifecycle(&had_pos);
        // Any Pos stamp (by an entity alive now or despawned since) counts.
        let stamped = matches!(op, Op::SpawnBatch { .. } | Op::BatchPanic { .. } | Op::Spawn { pos: Some(_), .. })
            || before.iter().any(|(e, t)| self.model.get(e).is_some_and(|m| m.pos.is_some() && m.pos_changed != *t));
        self.pos_stamped |= stamped;
    }

    fn apply_op(&mut self, op: &Op, now: u64) {
        match *op {
            Op::Spawn { pos, vel, tag, name, bomb } => {
                let mut m = Model {
                    pos,
                    pos_changed: now,
                    pos_added: now,
                    vel,
                    tag,
                    name: name.then(|| format!("n{now}")),
                    bomb: None,
                };
                let e = self.world.spawn(());
                if let Some(p) = pos {
                    self.world.insert(e, (Pos(p),)).unwrap();
                }
                if let Some(v) = vel {
                    self.world.insert(e, (Vel(v),)).unwrap();
                }
                if tag {
                    self.world.insert(e, (Tag,)).unwrap();
                }
                if let Some(n) = &m.name {
                    self.world.insert(e, (Name(n.clone()),)).unwrap();
                }
                if bomb {
                    let (b, id) = self.new_bomb();
                    self.world.insert(e, (b,)).unwrap();
                    m.bomb = Some(id);
                }
                self.spawned(e, m);
            }
            Op::SpawnBatch { count, pos } => {
                let es = self.world.spawn_batch((0..count).map(|i| (Pos(pos), Name(format!("b{i}")))));
                assert_eq!(es.len(), count);
                for (i, e) in es.into_iter().enumerate() {
                    let m = Model {
                        pos: Some(pos),
                        pos_changed: now,
                        pos_added: now,
                        name: Some(format!("b{i}")),
                        ..Model::default()
                    };
                    self.spawned(e, m);
                }
            }
            Op::Despawn(i) => {
                if let Some(e) = self.pick(i) {
                    self.world.despawn(e).unwrap();
                    self.despawned(e);
                }
            }
            Op::DespawnArmed(i) => {
                if let Some(e) = self.pick(i) {
                    let panicked = armed_run(true, || self.world.despawn(e).unwrap());
                    assert_eq!(panicked, self.model[&e].bomb.is_some(), "despawn panics iff a bomb is dropped");
                    self.despawned(e);
                }
            }
            Op::InsertBomb(i, armed) => {
                if let Some(e) = self.pick(i) {
                    let (b, id) = self.new_bomb();
                    let panicked = armed_run(armed, || self.world.insert(e, (b, Tag)).unwrap());
                    let m = self.model.get_mut(&e).unwrap();
                    assert_eq!(panicked, armed && m.bomb.is_some(), "insert panics iff a replaced bomb went off");
                    m.bomb = Some(id);
                    m.tag = true;
                }
            }
            Op::RemoveBomb(i, armed) => {
                if let Some(e) = self.pick(i) {
                    let mut result = None;
                    let panicked = armed_run(armed, || result = Some(self.world.remove_one::<Bomb>(e).map(drop)));
                    let m = self.model.get_mut(&e).unwrap();
                    assert_eq!(panicked, armed && m.bomb.is_some());
                    if !panicked {
                        assert_eq!(result.unwrap().is_ok(), m.bomb.is_some());
                    }
                    m.bomb = None;
                }
            }
            Op::ClearArmed => {
                let any_bomb = self.model.values().any(|m| m.bomb.is_some());
                let panicked = armed_run(true, || self.world.clear_entities());
                assert_eq!(panicked, any_bomb);
                for e in self.order.clone() {
                    self.despawned(e);
                }
            }
            Op::MovePanic(k) => {
                let mut written = Vec::new();
                let mut visited = 0;
                let panicked = armed_run(false, || {
                    self.mover_with_entity.for_each_mut(&mut self.world, |(e, mut p, v)| {
                        if visited == k {
                            panic!("system bug at row {k}");
                        }
                        visited += 1;
                        if v.0 != 0 {
                            p.0 += v.0;
                            written.push(e);
                        }
                    })
                });
                let movers = self.model.values().filter(|m| m.pos.is_some() && m.vel.is_some()).count();
                assert_eq!(panicked, k < movers);
                for e in written {
                    let m = self.model.get_mut(&e).unwrap();
                    *m.pos.as_mut().unwrap() += m.vel.unwrap();
                    m.pos_changed = now;
                }
            }
            Op::BatchPanic { count, k, pos } => {
                let world = &mut self.world;
                let panicked = armed_run(false, || {
                    let bundles = (0..count).map(|i| {
                        if i == k {
                            panic!("iterator bug at {k}");
                        }
                        (Pos(pos), Name(format!("p{i}")))
                    });
                    world.spawn_batch(bundles);
                });
                assert!(panicked);
                // The bundles yielded before the panic are spawned: find
                // them among the entities the model does not know.
                let mut all = self.world.query::<(Entity, &Pos, &Name)>();
                let mut new: Vec<(Entity, i32, String)> = all
                    .iter(&self.world)
                    .filter(|(e, ..)| !self.model.contains_key(e))
                    .map(|(e, p, n)| (e, p.0, n.0.clone()))
                    .collect();
                new.sort_by_key(|(_, _, n)| n[1..].parse::<usize>().unwrap());
                assert_eq!(new.len(), k, "the first {k} bundles are spawned");
                for (i, (e, p, n)) in new.into_iter().enumerate() {
                    assert_eq!((p, n.as_str()), (pos, format!("p{i}").as_str()));
                    let m =
                        Model { pos: Some(pos), pos_changed: now, pos_added: now, name: Some(n), ..Model::default() };
                    self.spawned(e, m);
                }
            }
            Op::CommandsArmed(i, j) => {
                if let (Some(a), Some(b)) = (self.pick(i), self.pick(j)) {
                    let mut queue = CommandQueue::default();
                    let mut commands = queue.commands(&self.world);
                    commands.despawn(a);
                    commands.insert(b, (Vel(7),));
                    let mut errors = Vec::new();
                    let panicked = armed_run(true, || errors = queue.apply(&mut self.world));
                    assert_eq!(panicked, self.model[&a].bomb.is_some());
                    if panicked {
                        assert_eq!(queue.len(), 1, "the insert waits");
                        self.world.check_consistency().unwrap();
                        errors = queue.apply(&mut self.world);
                    }
                    assert!(queue.is_empty());
                    assert_eq!(errors.len(), usize::from(a == b), "{errors:?}");
                    if a != b {
                        self.model.get_mut(&b).unwrap().vel = Some(7);
                    }
                    self.despawned(a);
                }
            }
            Op::InsertPos(i, x) => {
                if let Some(e) = self.pick(i) {
                    self.world.insert(e, (Pos(x),)).unwrap();
                    let m = self.model.get_mut(&e).unwrap();
                    if m.pos.is_none() {
                        m.pos_added = now;
                    }
                    m.pos = Some(x);
                    m.pos_changed = now;
                }
            }
            Op::InsertVel(i, x) => {
                if let Some(e) = self.pick(i) {
                    self.world.insert_one(e, Vel(x)).unwrap();
                    self.model.get_mut(&e).unwrap().vel = Some(x);
                }
            }
            Op::InsertTagName(i) => {
                if let Some(e) = self.pick(i) {
                    self.world.insert(e, (Tag, Name(format!("t{now}")))).unwrap();
                    let m = self.model.get_mut(&e).unwrap();
                    m.tag = true;
                    m.name = Some(format!("t{now}"));
                }
            }
            Op::RemovePos(i) => {
                if let Some(e) = self.pick(i) {
                    let m = self.model.get_mut(&e).unwrap();
                    match (self.world.remove_one::<Pos>(e), m.pos.take()) {
                        (Ok(Pos(got)), Some(want)) => assert_eq!(got, want),
                        (Err(StoreError::MissingComponent { .. }), None) => {}
                        other => panic!("remove Pos mismatch: {other:?}"),
                    }
                }
            }
            Op::RemoveVel(i) => {
                if let Some(e) = self.pick(i) {
                    let m = self.model.get_mut(&e).unwrap();
                    assert_eq!(self.world.remove_one::<Vel>(e).ok().map(|v| v.0), m.vel.take());
                }
            }
            Op::RemoveName(i) => {
                if let Some(e) = self.pick(i) {
                    let m = self.model.get_mut(&e).unwrap();
                    assert_eq!(self.world.remove_one::<Name>(e).ok().map(|n| n.0), m.name.take());
                }
            }
            Op::WritePos(i, x) => {
                if let Some(e) = self.pick(i) {
                    let m = self.model.get_mut(&e).unwrap();
                    match self.world.get_mut::<Pos>(e) {
                        Ok(mut p) => {
                            p.0 = x;
                            m.pos = Some(x);
                            m.pos_changed = now;
                        }
                        Err(_) => assert!(m.pos.is_none()),
                    }
                }
            }
            Op::SetIfNeqPos(i, x) => {
                if let Some(e) = self.pick(i) {
                    let m = self.model.get_mut(&e).unwrap();
                    if let Ok(mut p) = self.world.get_mut::<Pos>(e) {
                        let wrote = p.set_if_neq(Pos(x));
                        assert_eq!(wrote, m.pos != Some(x));
                        if wrote {
                            m.pos = Some(x);
                            m.pos_changed = now;
                        }
                    }
                }
            }
            Op::QueryMove => {
                self.mover.for_each_mut(&mut self.world, |(mut p, v)| {
                    if v.0 != 0 {
                        p.0 += v.0;
                    }
                });
                for m in self.model.values_mut() {
                    if let (Some(p), Some(v)) = (m.pos.as_mut(), m.vel)
                        && v != 0
                    {
                        *p += v;
                        m.pos_changed = now;
                    }
                }
            }
            Op::QueryChanged => {
                let got: HashSet<Entity> = self.changed.iter(&self.world).collect();
                let want: HashSet<Entity> = self
                    .model
                    .iter()
                    .filter(|(_, m)| m.pos.is_some() && m.pos_changed > self.changed_last && m.pos_changed <= now)
                    .map(|(&e, _)| e)
                    .collect();
                assert_eq!(got, want, "Changed<Pos> at tick {now}, last run {}", self.changed_last);
                self.changed_last = now;
                let s = self.changed.stats();
                assert!(s.chunks_skipped <= s.chunks_total);
                let with_pos = self.model.values().filter(|m| m.pos.is_some()).count() as u64;
                assert_eq!(s.entities, with_pos, "entities counts every matched row");
                if !self.pos_stamped {
                    assert_eq!(s.chunks_skipped, s.chunks_total, "nothing written: every chunk skipped");
                }
                self.pos_stamped = false;
            }
            Op::QueryAdded => {
                let got: HashSet<Entity> = self.added.iter(&self.world).collect();
                let want: HashSet<Entity> = self
                    .model
                    .iter()
                    .filter(|(_, m)| m.pos.is_some() && m.pos_added > self.added_last && m.pos_added <= now)
                    .map(|(&e, _)| e)
                    .collect();
                assert_eq!(got, want, "Added<Pos> at tick {now}");
                self.added_last = now;
            }
            Op::Tick => {
                self.world.increment_change_tick();
            }
            Op::Stale(i) => {
                if !self.dead.is_empty() {
                    let e = self.dead[i % self.dead.len()];
                    let err = StoreError::NoSuchEntity(e);
                    assert_eq!(self.world.despawn(e), Err(err.clone()));
                    assert_eq!(self.world.insert(e, (Vel(1),)), Err(err.clone()));
                    assert_eq!(self.world.get::<Pos>(e).err(), Some(err.clone()));
                    assert_eq!(self.world.remove_one::<Name>(e).err(), Some(err));
                }
            }
        }
    }

    /// The hooks ran once per `Pos` gained or lost in this operation (also
    /// when it panicked), and the observer of `OnRemove<Pos>` saw every
    /// loss once the queued work ran.
    fn check_lifecycle(&mut self, had_pos: &HashMap<Entity, bool>) {
        if !self.listen {
            return;
        }
        let has = |e: &Entity| self.model.get(e).is_some_and(|m| m.pos.is_some());
        let mut want: Vec<(char, Entity)> =
            had_pos.iter().filter(|&(e, &had)| had && !has(e)).map(|(&e, _)| ('r', e)).collect();
        want.extend(
            self.model.keys().filter(|&e| has(e) && !had_pos.get(e).copied().unwrap_or(false)).map(|&e| ('a', e)),
        );
        want.sort();
        let mut got = std::mem::take(&mut self.world.resource_mut::<HookLog>().unwrap().0);
        got.sort();
        assert_eq!(got, want, "hook calls");
        self.removed_pos.extend(want.iter().filter(|(k, _)| *k == 'r').map(|&(_, e)| e));
        self.world.flush();
        let mut seen = std::mem::take(&mut self.world.resource_mut::<ObserverLog>().unwrap().0);
        seen.sort();
        let mut expected = std::mem::take(&mut self.removed_pos);
        expected.sort();
        assert_eq!(seen, expected, "OnRemove<Pos> observer");
        assert!(self.world.take_lifecycle_errors().is_empty());
    }

    fn check(&mut self) {
        if let Err(e) = self.world.check_consistency() {
            panic!("store invariant broken: {e}");
        }
        let live: HashSet<u64> = self.model.values().filter_map(|m| m.bomb).collect();
        BOMB_DROPS.with(|d| {
            let d = d.borrow();
            for id in 0..self.bombs {
                let drops = d.get(&id).copied().unwrap_or(0);
                assert_eq!(drops, u32::from(!live.contains(&id)), "bomb {id} dropped {drops} times");
            }
        });
        assert_eq!(self.world.len() as usize, self.model.len());
        for (&e, m) in &self.model {
            assert!(self.world.contains(e));
            assert_eq!(self.world.get::<Pos>(e).ok().map(|p| p.0), m.pos, "{e} Pos");
            assert_eq!(self.world.get::<Vel>(e).ok().map(|v| v.0), m.vel, "{e} Vel");
            assert_eq!(self.world.has::<Tag>(e), Ok(m.tag), "{e} Tag");
            assert_eq!(self.world.get::<Name>(e).ok().map(|n| n.0.clone()), m.name, "{e} Name");
            assert_eq!(self.world.get::<Bomb>(e).ok().map(|b| *b.0), m.bomb, "{e} Bomb");
        }
        for &e in &self.dead {
            assert!(!self.world.contains(e));
        }
        let mut all = self.world.query::<(Entity, Option<&Pos>)>();
        let seen: Vec<(Entity, Option<i32>)> = all.iter(&self.world).map(|(e, p)| (e, p.map(|p| p.0))).collect();
        assert_eq!(seen.len(), self.model.len());
        for (e, p) in seen {
            assert_eq!(self.model[&e].pos, p);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn world_matches_model(ops in proptest::collection::vec(op(), 1..60), listen in any::<bool>()) {
        let mut h = Harness::new(listen);
        for op in &ops {
            h.apply(op);
            h.check();
        }
        let bombs = h.bombs;
        drop(h);
        // Dropping the world drops every bomb still alive, once.
        BOMB_DROPS.with(|d| {
            let d = d.borrow();
            for id in 0..bombs {
                assert_eq!(d.get(&id).copied(), Some(1), "bomb {id}");
            }
        });
    }
}
