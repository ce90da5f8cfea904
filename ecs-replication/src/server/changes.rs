//! Change detection, once per tick for all clients: which replicated
//! entities appeared ([`ecs_core::Added`] on the [`Replicated`] marker,
//! chunk-skipping), which disappeared, and which component values were
//! written (one `Changed<T>` query per component: whole chunks skipped by
//! their chunk tick, then row ticks). Values are quantized once here; a
//! write that quantizes to the same value is not a change.

use std::collections::VecDeque;

use ecs_core::{Added, Disabled, Entity, QueryState, RemovedReader, With, World};
use glam::Vec3;

use crate::codec::{NetId, Value};
use crate::registry::{Column, Registry, Replicated};
use crate::tick::tick_newer;

use super::{IdMap, TickStats};

/// The server's copy of one replicated entity: its quantized values.
pub(super) struct Record {
    pub(super) entity: Entity,
    pub(super) values: Vec<Option<Value>>,
    /// An undo log: for each change of the last delta window, the tick
    /// and the component's value before it, ascending. A client's baseline
    /// at tick `b` is the current values with every change after `b`
    /// undone. A change moves its old value here (no copy of the state).
    pub(super) undo: VecDeque<(u32, u8, Option<Value>)>,
    /// The dequantized position, if it has the position component.
    pub(super) position: Option<Vec3>,
    /// Components changed this tick (schema bits).
    pub(super) changed_mask: u64,
    /// The tick it appeared.
    pub(super) spawned: u32,
}

impl Record {
    /// The values at the end of tick `tick` into `out` (`tick` inside the
    /// delta window, where the undo log is complete).
    pub(super) fn state_at(&self, tick: u32, out: &mut Vec<Option<Value>>) {
        out.clone_from(&self.values);
        for (t, index, old) in self.undo.iter().rev() {
            if !tick_newer(*t, tick) {
                break;
            }
            out[*index as usize] = old.clone();
        }
    }
}

/// The world-level half of a tick: records of every replicated entity and
/// what happened to them this tick.
pub(super) struct ChangeScan {
    columns: Vec<Box<dyn Column>>,
    added: QueryState<Entity, Added<Replicated>>,
    all: QueryState<Entity, With<Replicated>>,
    /// Entities whose `Disabled` marker was removed: a disabled entity is
    /// not replicated (its clients despawn it), so one enabled again is new
    /// to them, and `Added<Replicated>` does not say so.
    enabled: RemovedReader<Disabled>,
    /// Entities despawned or that lost `Replicated`.
    lost: RemovedReader<Replicated>,
    /// Replicated entities disabled since the last scan.
    disabled: QueryState<Entity, (With<Replicated>, Added<Disabled>)>,
    next_net_id: u64,
    pub(super) by_entity: IdMap<Entity, NetId>,
    pub(super) records: IdMap<NetId, Record>,
    /// Entities that appeared this tick, ascending.
    pub(super) spawned: Vec<NetId>,
    /// Entities that disappeared this tick, ascending (their records are
    /// gone).
    pub(super) despawned: Vec<NetId>,
    /// Entities with a changed value this tick, ascending.
    pub(super) changed: Vec<NetId>,
    /// Entities whose position changed, or that appeared with one, this
    /// tick: the only ones whose interest can change for a fixed view.
    pub(super) moved: Vec<NetId>,
    /// Whether any position changed, appeared or disappeared this tick.
    pub(super) positions_changed: bool,
    /// The records of entities that disappeared within the delta window,
    /// with the tick they did, oldest first: what a client should still
    /// hold at an earlier tick of the window ([`crate::check`]).
    pub(super) departed: VecDeque<(u32, NetId, Record)>,
}

impl ChangeScan {
    pub(super) fn new(world: &mut World, registry: &Registry) -> ChangeScan {
        ChangeScan {
            columns: registry.columns(world),
            added: QueryState::new(world),
            all: QueryState::new(world),
            enabled: world.removed_reader::<Disabled>(),
            lost: world.removed_reader::<Replicated>(),
            disabled: QueryState::new(world),
            next_net_id: 1,
            by_entity: IdMap::default(),
            records: IdMap::default(),
            spawned: Vec::new(),
            despawned: Vec::new(),
            changed: Vec::new(),
            moved: Vec::new(),
            positions_changed: false,
            departed: VecDeque::new(),
        }
    }

    /// Finds this tick's spawns, despawns and changed values.
    pub(super) fn scan(
        &mut self,
        world: &mut World,
        registry: &Registry,
        tick: u32,
        window: u32,
        stats: &mut TickStats,
    ) {
        for net in self.changed.drain(..) {
            if let Some(r) = self.records.get_mut(&net) {
                r.changed_mask = 0;
            }
        }
        self.spawned.clear();
        self.despawned.clear();
        self.positions_changed = false;
        // Departed records older than the window are never asked for.
        let oldest = tick.wrapping_sub(window);
        while self.departed.front().is_some_and(|(t, _, _)| !tick_newer(*t, oldest)) {
            self.departed.pop_front();
        }
        self.find_spawns_and_despawns(world, registry, tick, stats);
        self.find_changes(world, registry, tick, stats);
        // Changes older than the window are never undone again.
        for net in &self.changed {
            let Some(r) = self.records.get_mut(net) else { continue };
            while r.undo.front().is_some_and(|(t, _, _)| !tick_newer(*t, oldest)) {
                r.undo.pop_front();
            }
        }
    }

    fn find_spawns_and_despawns(&mut self, world: &mut World, registry: &Registry, tick: u32, stats: &mut TickStats) {
        let mut new_entities: Vec<Entity> = Vec::new();
        let by_entity = &self.by_entity;
        self.added.for_each(world, |e| {
            if !by_entity.contains_key(&e) {
                new_entities.push(e);
            }
        });
        // Replicated now: alive, marked `Replicated`, not disabled.
        let replicated =
            |e: Entity| world.has::<Replicated>(e).unwrap_or(false) && !world.has::<Disabled>(e).unwrap_or(true);
        let enabled = self.enabled.read(world).filter(|&e| !by_entity.contains_key(&e) && replicated(e));
        new_entities.extend(enabled);
        // Added and enabled in one tick, or enabled twice: listed once.
        new_entities.sort_unstable();
        new_entities.dedup();
        // The records that leave: despawned or lost `Replicated` (its
        // removal log), or disabled (`Added<Disabled>`); each is checked,
        // since it may have come back within the tick.
        let gone = |e: Entity| !replicated(e);
        let mut dead: Vec<NetId> =
            self.lost.read(world).filter(|&e| gone(e)).filter_map(|e| by_entity.get(&e).copied()).collect();
        self.disabled.for_each(world, |e| {
            if let Some(&net) = by_entity.get(&e) {
                dead.push(net);
            }
        });
        dead.sort_unstable();
        dead.dedup();
        self.all.update_archetypes(world);
        let archetypes = world.archetypes();
        let count: usize = self.all.matched_archetypes().map(|id| archetypes[id.index()].len()).sum();
        if count + dead.len() != self.records.len() + new_entities.len() {
            // The lists missed an entity (they cannot, while the server
            // reads them every tick): find the records that left by
            // checking every one.
            dead = self.records.iter().filter(|(_, r)| gone(r.entity)).map(|(id, _)| *id).collect();
            dead.sort_unstable();
            stats.departures_swept = true;
        }
        for net in dead {
            if let Some(r) = self.records.remove(&net) {
                self.by_entity.remove(&r.entity);
                if r.position.is_some() {
                    self.positions_changed = true;
                }
                self.departed.push_back((tick, net, r));
            }
            self.despawned.push(net);
            stats.despawned += 1;
        }
        // Ids first, so references between new entities resolve.
        let first = self.next_net_id;
        for entity in &new_entities {
            self.by_entity.insert(*entity, NetId(self.next_net_id));
            self.next_net_id += 1;
        }
        for (i, entity) in new_entities.into_iter().enumerate() {
            let net = NetId(first + i as u64);
            let by_entity = &self.by_entity;
            let refs = |e: Entity| by_entity.get(&e).copied();
            let mut values = Vec::with_capacity(self.columns.len());
            for column in &self.columns {
                values.push(match column.read(world, entity, &refs) {
                    Some(Ok(v)) => Some(v),
                    Some(Err(_)) => {
                        stats.quantize_errors += 1;
                        None
                    }
                    None => None,
                });
            }
            let position = position_of(registry, &values);
            if position.is_some() {
                self.positions_changed = true;
                self.moved.push(net);
            }
            self.records.insert(
                net,
                Record { entity, values, undo: VecDeque::new(), position, changed_mask: 0, spawned: tick },
            );
            self.spawned.push(net);
            stats.spawned += 1;
        }
    }

    fn find_changes(&mut self, world: &mut World, registry: &Registry, tick: u32, stats: &mut TickStats) {
        let position_index = registry.position_index();
        let quantizer = registry.position_quantizer();
        let (records, by_entity, changed, moved) =
            (&mut self.records, &self.by_entity, &mut self.changed, &mut self.moved);
        let mut positions_changed = false;
        let mut removed = Vec::new();
        for (index, column) in self.columns.iter_mut().enumerate() {
            // Removals first: a removal and a re-insert in one tick is a
            // change, which the scan below reports.
            removed.clear();
            column.scan_removed(world, &mut removed);
            for entity in &removed {
                let Some(net) = by_entity.get(entity) else { continue };
                let Some(record) = records.get_mut(net) else { continue };
                let Some(old) = record.values[index].take() else { continue };
                record.undo.push_back((tick, index as u8, Some(old)));
                if Some(index) == position_index {
                    record.position = None;
                    positions_changed = true;
                    moved.push(*net);
                }
                if record.changed_mask == 0 {
                    changed.push(*net);
                }
                record.changed_mask |= 1 << index;
                stats.removed += 1;
            }
            let world: &World = world;
            let refs = |e: Entity| by_entity.get(&e).copied();
            column.scan_changed(world, &refs, &mut |entity, value| {
                let Some(net) = by_entity.get(&entity) else { return };
                let Some(record) = records.get_mut(net) else { return };
                let value = match value {
                    Ok(v) => v,
                    Err(_) => {
                        stats.quantize_errors += 1;
                        return;
                    }
                };
                if record.values[index].as_ref() == Some(&value) {
                    return;
                }
                if Some(index) == position_index
                    && let (Value::Position(p), Some(q)) = (&value, quantizer)
                {
                    record.position = Some(q.dequantize(*p));
                    positions_changed = true;
                    moved.push(*net);
                }
                let old = record.values[index].replace(value);
                record.undo.push_back((tick, index as u8, old));
                if record.changed_mask == 0 {
                    changed.push(*net);
                }
                record.changed_mask |= 1 << index;
            });
            let chunks = column.scan_stats();
            stats.chunks_total += chunks.chunks_total;
            stats.chunks_skipped += chunks.chunks_skipped;
        }
        self.changed.sort_unstable();
        stats.changed = self.changed.len();
        self.positions_changed |= positions_changed;
    }
}

/// The dequantized position among a record's values.
fn position_of(registry: &Registry, values: &[Option<Value>]) -> Option<Vec3> {
    let q = registry.position_quantizer()?;
    match values.get(registry.position_index()?)? {
        Some(Value::Position(p)) => Some(q.dequantize(*p)),
        _ => None,
    }
}
