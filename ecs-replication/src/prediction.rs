//! Client-side prediction and rollback, in the Netcode for Entities /
//! lightyear model.
//!
//! The client runs the same fixed-step systems as the server on the
//! entities it controls (marked [`Predicted`], see
//! [`Client::set_predicted`]), ahead of the server by about half a round
//! trip ([`crate::clock`]), with its own inputs. After simulating tick T it
//! saves the predicted components of the predicted entities
//! ([`Prediction::save`]): one query per predicted component type that
//! matches the predicted archetypes only, so the rest of the world costs
//! nothing. The server puts controlled entities in every packet
//! ([`crate::server::Server::set_controlled`]), so when the snapshot of tick
//! S arrives the client holds the server's state at S and compares it with
//! what it saved for S ([`Prediction::reconcile`]). A correct prediction
//! costs that comparison. On a difference beyond a component's tolerance
//! ([`crate::registry::Registry::predict`]) it writes the server's state at
//! S into the predicted entities and re-simulates S+1 up to now with the
//! stored inputs (the caller's `simulate`), saving each tick again.
//!
//! Corrections snap: there is no visual smoothing; the count of rollbacks
//! and re-simulated ticks is in [`PredictionStats`].

use std::collections::VecDeque;

use ecs_core::{Entity, World};

use crate::client::Client;
use crate::codec::{FieldCodec, Schema, Value};
use crate::registry::{Column, Predicted, Registry};
use crate::tick::{next_tick, tick_diff, tick_newer};

/// Counters of a client's prediction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictionStats {
    /// Ticks simulated ahead (first runs, not re-simulations).
    pub ticks_saved: u64,
    /// Server states compared with a saved prediction.
    pub comparisons: u64,
    /// Comparisons that differed beyond tolerance.
    pub mispredictions: u64,
    /// Rollbacks (one per misprediction that was corrected).
    pub rollbacks: u64,
    /// Ticks run again during rollbacks.
    pub resimulated_ticks: u64,
    /// Server states that could not be compared (no saved tick: too old,
    /// or the client was behind the server).
    pub uncompared: u64,
}

/// The saved predicted values of one tick: (entity, component, value).
type SavedTick = Vec<(Entity, u8, Value)>;

/// The client's prediction state. See the [module docs](self).
pub struct Prediction {
    columns: Vec<Box<dyn Column>>,
    schema: Schema,
    tolerances: Vec<Option<u32>>,
    /// Saved predictions, ascending by tick.
    history: VecDeque<(u32, SavedTick)>,
    capacity: usize,
    /// The newest server tick compared.
    checked: u32,
    stats: PredictionStats,
    scratch: SavedTick,
}

/// Whether two wire values of one component agree within `tolerance`
/// quantization steps: positions per axis, rotations per stored level (the
/// same dropped component), bytes exactly.
pub fn values_agree(codec: FieldCodec, a: &Value, b: &Value, tolerance: u32) -> bool {
    let tol = tolerance as i64;
    match (codec, a, b) {
        (_, a, b) if a == b => true,
        (FieldCodec::Position(_), Value::Position(a), Value::Position(b)) => {
            (0..3).all(|i| (a[i] as i64 - b[i] as i64).abs() <= tol)
        }
        (FieldCodec::Rotation(q), Value::Rotation(a), Value::Rotation(b)) => {
            let bits = q.total_bits().saturating_sub(2) / 3;
            let level = |v: u64, i: u32| ((v >> (2 + i * bits)) & ((1u64 << bits) - 1)) as i64;
            a & 3 == b & 3 && (0..3).all(|i| (level(*a, i) - level(*b, i)).abs() <= tol)
        }
        _ => false,
    }
}

impl Prediction {
    /// Prediction for the client world `world` of `registry` (the same
    /// registry the client uses), keeping `capacity` ticks of saved
    /// predictions (at least 2; a round trip's worth is what matters).
    pub fn new(world: &mut World, registry: &Registry, capacity: usize) -> Prediction {
        let schema = registry.schema().clone();
        let tolerances = (0..schema.len()).map(|i| registry.predicted(i)).collect();
        Prediction {
            columns: registry.columns(world),
            schema,
            tolerances,
            history: VecDeque::new(),
            capacity: capacity.max(2),
            checked: 0,
            stats: PredictionStats::default(),
            scratch: Vec::new(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> PredictionStats {
        self.stats
    }

    /// Ticks saved now.
    pub fn saved_ticks(&self) -> usize {
        self.history.len()
    }

    /// Saves the predicted components of every [`Predicted`] entity as the
    /// state of `tick` (just simulated). A tick saved again replaces its
    /// earlier state, and every later one is dropped (it is being run
    /// again).
    pub fn save(&mut self, world: &World, tick: u32) {
        self.save_inner(world, tick);
        self.stats.ticks_saved += 1;
    }

    fn save_inner(&mut self, world: &World, tick: u32) {
        while self.history.back().is_some_and(|(t, _)| !tick_newer(tick, *t)) {
            self.history.pop_back();
        }
        let mut values = match self.history.len() >= self.capacity {
            true => self.history.pop_front().map(|(_, v)| v).unwrap_or_default(),
            false => std::mem::take(&mut self.scratch),
        };
        values.clear();
        for (index, column) in self.columns.iter_mut().enumerate() {
            if self.tolerances[index].is_some() {
                column.save_predicted(world, index as u8, &mut values);
            }
        }
        self.history.push_back((tick, values));
    }

    /// Compares the server's newest state of the predicted entities with
    /// the saved prediction for its tick; on a difference, writes the
    /// server's state into the world and calls `simulate(world, t)` for
    /// every tick after it up to `current` (the client's newest simulated
    /// tick), saving each. Returns whether it rolled back.
    ///
    /// If the server's tick is not behind `current` (the client is not
    /// ahead yet, or fell behind), the server's state is written, nothing
    /// is re-simulated, and it is not counted as a rollback.
    pub fn reconcile(
        &mut self,
        world: &mut World,
        client: &Client,
        current: u32,
        mut simulate: impl FnMut(&mut World, u32),
    ) -> bool {
        let Some(confirmed) =
            client.predicted().map(|p| p.confirmed_tick).reduce(|a, b| if tick_newer(b, a) { b } else { a })
        else {
            return false;
        };
        if confirmed == 0 || (self.checked != 0 && !tick_newer(confirmed, self.checked)) {
            return false;
        }
        self.checked = confirmed;
        let behind = current == 0 || !tick_newer(current, confirmed);
        let saved = self.history.iter_mut().rev().find(|(t, _)| *t == confirmed).map(|(_, v)| {
            // In (entity, component) order once, so each lookup below is a
            // binary search, not a scan of every saved value.
            if !v.is_sorted_by_key(|&(e, i, _)| (e, i)) {
                v.sort_unstable_by_key(|&(e, i, _)| (e, i));
            }
            v.as_slice()
        });
        let mismatch = match (behind, saved) {
            (true, _) => true,
            (false, None) => {
                self.stats.uncompared += 1;
                false
            }
            (false, Some(saved)) => {
                self.stats.comparisons += 1;
                let mut differs = false;
                for p in client.predicted().filter(|p| p.confirmed_tick == confirmed) {
                    for (index, tolerance) in self.tolerances.iter().enumerate() {
                        let Some(tolerance) = tolerance else { continue };
                        let server = p.values.get(index).and_then(|v| v.as_ref());
                        let predicted = saved
                            .binary_search_by_key(&(p.local, index as u8), |&(e, i, _)| (e, i))
                            .ok()
                            .map(|k| &saved[k].2);
                        let agree = match (server, predicted, self.schema.codec(index)) {
                            (None, None, _) => true,
                            (Some(a), Some(b), Some(codec)) => values_agree(codec, a, b, *tolerance),
                            _ => false,
                        };
                        if !agree {
                            differs = true;
                        }
                    }
                }
                if differs {
                    self.stats.mispredictions += 1;
                }
                differs
            }
        };
        if !mismatch {
            return false;
        }
        // Back to the server's state at `confirmed`.
        let refs = |n| client.local_entity(n);
        for p in client.predicted() {
            if !world.contains(p.local) {
                continue;
            }
            for (index, tolerance) in self.tolerances.iter().enumerate() {
                if tolerance.is_none() {
                    continue;
                }
                match p.values.get(index).and_then(|v| v.as_ref()) {
                    Some(value) => {
                        self.columns[index].write(world, p.local, value, &refs);
                    }
                    None => self.columns[index].remove(world, p.local),
                }
            }
        }
        if behind {
            self.history.clear();
            return false;
        }
        self.stats.rollbacks += 1;
        // The corrected state of `confirmed` replaces the prediction.
        self.save_inner(world, confirmed);
        let mut tick = confirmed;
        let runs = tick_diff(current, confirmed).max(0);
        for _ in 0..runs {
            tick = next_tick(tick);
            simulate(world, tick);
            self.save_inner(world, tick);
            self.stats.resimulated_ticks += 1;
        }
        true
    }

    /// Forgets every saved tick (after the clock jumped).
    pub fn clear(&mut self) {
        self.history.clear();
    }
}

/// Whether an entity is predicted in `world`.
pub fn is_predicted(world: &World, entity: Entity) -> bool {
    world.has::<Predicted>(entity).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantize::{PositionQuantizer, RotationQuantizer};

    #[test]
    fn agreement_within_tolerance() {
        let p = FieldCodec::Position(PositionQuantizer::new(0.01, 20).unwrap());
        assert!(values_agree(p, &Value::Position([1, 2, 3]), &Value::Position([2, 2, 2]), 1));
        assert!(!values_agree(p, &Value::Position([1, 2, 3]), &Value::Position([3, 2, 3]), 1));
        let r = RotationQuantizer::new(9).unwrap();
        let codec = FieldCodec::Rotation(r);
        let a = r.encode(glam::Quat::from_rotation_y(0.3)).unwrap();
        let b = r.encode(glam::Quat::from_rotation_y(0.31)).unwrap();
        assert!(a != b && values_agree(codec, &Value::Rotation(a), &Value::Rotation(b), 3));
        assert!(!values_agree(codec, &Value::Rotation(a), &Value::Rotation(b), 0));
        let bytes = FieldCodec::Bytes(2, crate::codec::BytesDelta::Xor);
        assert!(!values_agree(bytes, &Value::Bytes(vec![1, 2]), &Value::Bytes(vec![1, 3]), 100));
    }
}
