//! Interest: which entities each client sees. A client with a view sees
//! the entities within its radius (answered by an `ecs-spatial`
//! [`SparseGrid`]) and every entity without a position; a client without
//! one sees everything.

use std::collections::BTreeMap;

use ecs_spatial::SparseGrid;
use glam::Vec3;

use crate::codec::NetId;

use super::changes::Record;
use super::client_state::ClientState;
use super::{ClientId, IdMap, ServerError};

/// What a client sees: everything within `radius` of `center`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// The middle of the view.
    pub center: Vec3,
    /// The view radius.
    pub radius: f32,
}

/// Refuses a view that is not finite or has a negative radius.
pub(super) fn check_view(v: View) -> Result<(), ServerError> {
    if v.center.is_finite() && v.radius.is_finite() && v.radius >= 0.0 { Ok(()) } else { Err(ServerError::BadView) }
}

/// Whether a record is in a view (no view, or no position: always).
pub(super) fn in_view(view: Option<View>, record: &Record) -> bool {
    match (view, record.position) {
        (None, _) | (_, None) => true,
        (Some(v), Some(p)) => p.distance_squared(v.center) <= v.radius * v.radius,
    }
}

/// The interest grid and its scratch space.
pub(super) struct Interest {
    grid: Option<SparseGrid<Vec3, NetId>>,
    /// Positions changed since the grid was built; it is rebuilt only when
    /// a view is (re)placed and needs a full radius query.
    stale: bool,
    scratch_ids: Vec<NetId>,
    scratch_positions: Vec<Vec3>,
    scratch_hits: Vec<NetId>,
    /// A client's entities that came into or left its view this tick.
    scratch_entered: Vec<NetId>,
    scratch_left: Vec<NetId>,
    scratch_merge: Vec<NetId>,
}

impl Interest {
    pub(super) fn new(cell: f32) -> Interest {
        Interest {
            grid: SparseGrid::new(Vec3::ZERO, cell).ok(),
            stale: true,
            scratch_ids: Vec::new(),
            scratch_positions: Vec::new(),
            scratch_hits: Vec::new(),
            scratch_entered: Vec::new(),
            scratch_left: Vec::new(),
            scratch_merge: Vec::new(),
        }
    }

    /// Positions changed: the grid must be rebuilt before its next full
    /// query.
    pub(super) fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// Brings every client's interest set up to date. A client whose view
    /// was (re)placed gets a full radius query on the grid (rebuilt first if
    /// positions changed since it was built); for the others only the
    /// entities that `moved` (or spawned) this tick are tested against the
    /// view, so a tick costs O(moved x clients), not O(world). Returns
    /// whether the grid was rebuilt.
    pub(super) fn update(
        &mut self,
        clients: &mut BTreeMap<ClientId, ClientState>,
        records: &IdMap<NetId, Record>,
        moved: &mut Vec<NetId>,
        tick: u32,
    ) -> bool {
        moved.sort_unstable();
        moved.dedup();
        let any_view = clients.values().any(|c| c.view.is_some());
        let Some(grid) = self.grid.as_mut().filter(|_| any_view) else {
            moved.clear();
            return false;
        };
        let mut rebuilt = false;
        let placed = clients.values().any(|c| c.view.is_some() && c.view_changed);
        if placed && self.stale {
            self.scratch_ids.clear();
            self.scratch_positions.clear();
            let mut ids: Vec<(NetId, Vec3)> =
                records.iter().filter_map(|(id, r)| r.position.map(|p| (*id, p))).collect();
            ids.sort_unstable_by_key(|(id, _)| *id);
            for (id, p) in ids {
                self.scratch_ids.push(id);
                self.scratch_positions.push(p);
            }
            if grid.rebuild(&self.scratch_ids, &self.scratch_positions).is_err() {
                // A point out of the grid's key range: a grid of what can be
                // keyed (unkeyable points are never in view, see below).
                let (ids, positions): (Vec<NetId>, Vec<Vec3>) = self
                    .scratch_ids
                    .iter()
                    .zip(&self.scratch_positions)
                    .filter(|(_, p)| grid.cell_key_of(**p).is_ok())
                    .map(|(i, p)| (*i, *p))
                    .unzip();
                let _ = grid.rebuild(&ids, &positions);
            }
            self.stale = false;
            rebuilt = true;
        }
        let position = |net: NetId| records.get(&net).and_then(|r| r.position);
        for client in clients.values_mut() {
            let Some(view) = client.view else { continue };
            if !client.view_changed {
                // The same predicate as the grid's radius query, plus "the
                // grid can key it", so both paths agree on every entity.
                let r2 = view.radius * view.radius;
                let (entered, left) = (&mut self.scratch_entered, &mut self.scratch_left);
                entered.clear();
                left.clear();
                for &net in moved.iter() {
                    let Some(record) = records.get(&net) else { continue };
                    // Without a position (it was removed): seen everywhere.
                    let inside = record
                        .position
                        .is_none_or(|p| p.distance_squared(view.center) <= r2 && grid.cell_key_of(p).is_ok());
                    match (client.interest.binary_search(&net).is_ok(), inside) {
                        (false, true) => {
                            entered.push(net);
                            client.enter(net, tick, record.position);
                        }
                        (true, false) => {
                            left.push(net);
                            client.leave(net, record.position);
                        }
                        _ => {}
                    }
                }
                // `moved` ascends, so both lists do: one merge into the set,
                // where an insert or a removal each shifted its tail.
                remove_sorted(&mut client.interest, left);
                insert_sorted(&mut client.interest, entered, &mut self.scratch_merge);
                continue;
            }
            client.view_changed = false;
            self.scratch_hits.clear();
            grid.query_radius(view.center, view.radius, &mut self.scratch_hits);
            self.scratch_hits.sort_unstable();
            // Leaving: in the old set, not in the new one.
            let old = std::mem::take(&mut client.interest);
            let (mut i, mut j) = (0, 0);
            while i < old.len() || j < self.scratch_hits.len() {
                let a = old.get(i).copied();
                let b = self.scratch_hits.get(j).copied();
                match (a, b) {
                    (Some(x), Some(y)) if x == y => {
                        i += 1;
                        j += 1;
                    }
                    (Some(x), Some(y)) if x < y => {
                        client.leave(x, position(x));
                        i += 1;
                    }
                    (Some(x), None) => {
                        client.leave(x, position(x));
                        i += 1;
                    }
                    (_, Some(y)) => {
                        client.enter(y, tick, position(y));
                        j += 1;
                    }
                    (None, None) => break,
                }
            }
            client.interest.extend_from_slice(&self.scratch_hits);
        }
        moved.clear();
        rebuilt
    }
}

/// Removes from the ascending `set` the ascending `gone` (entries of `gone`
/// not in `set` are passed over), in one pass.
pub(super) fn remove_sorted(set: &mut Vec<NetId>, gone: &[NetId]) {
    if gone.is_empty() || set.is_empty() {
        return;
    }
    let mut next = 0;
    set.retain(|net| {
        while next < gone.len() && gone[next] < *net {
            next += 1;
        }
        !(next < gone.len() && gone[next] == *net)
    });
}

/// Merges the ascending `new` (none of them in `set`) into the ascending
/// `set`, in one pass through `scratch`.
fn insert_sorted(set: &mut Vec<NetId>, new: &[NetId], scratch: &mut Vec<NetId>) {
    if new.is_empty() {
        return;
    }
    scratch.clear();
    scratch.reserve(set.len() + new.len());
    let (mut i, mut j) = (0, 0);
    while i < set.len() && j < new.len() {
        if set[i] < new[j] {
            scratch.push(set[i]);
            i += 1;
        } else {
            scratch.push(new[j]);
            j += 1;
        }
    }
    scratch.extend_from_slice(&set[i..]);
    scratch.extend_from_slice(&new[j..]);
    std::mem::swap(set, scratch);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u64]) -> Vec<NetId> {
        v.iter().map(|&n| NetId(n)).collect()
    }

    #[test]
    fn sorted_removals_and_inserts_keep_the_set_sorted_and_exact() {
        let mut set = ids(&[1, 3, 5, 7, 9, 11]);
        // Entries not in the set are passed over.
        remove_sorted(&mut set, &ids(&[0, 3, 4, 9, 12]));
        assert_eq!(set, ids(&[1, 5, 7, 11]));
        let mut scratch = Vec::new();
        insert_sorted(&mut set, &ids(&[0, 2, 6, 12, 13]), &mut scratch);
        assert_eq!(set, ids(&[0, 1, 2, 5, 6, 7, 11, 12, 13]));
        remove_sorted(&mut set, &ids(&[0, 1, 2, 5, 6, 7, 11, 12, 13]));
        assert!(set.is_empty());
        insert_sorted(&mut set, &ids(&[4]), &mut scratch);
        assert_eq!(set, ids(&[4]));
    }
}
