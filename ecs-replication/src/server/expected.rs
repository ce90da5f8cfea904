//! What a client should hold at a tick of the delta window, from the
//! records' undo logs: the entities in its interest then (appeared by that
//! tick, not yet gone), with their values then. For [`crate::check`].

use crate::check::CheckError;
use crate::codec::{NetId, Value};
use crate::tick::{tick_diff, tick_newer};

use super::changes::Record;
use super::interest::View;
use super::{ClientId, Server};

/// Whether a record's state `values` is inside `view` (no view, or no
/// position: always).
fn in_view_then(server: &Server, view: Option<View>, values: &[Option<Value>]) -> bool {
    let Some(view) = view else { return true };
    let (Some(index), Some(q)) = (server.registry.position_index(), server.registry.position_quantizer()) else {
        return true;
    };
    match values.get(index) {
        Some(Some(Value::Position(p))) => q.dequantize(*p).distance_squared(view.center) <= view.radius * view.radius,
        _ => true,
    }
}

impl Server {
    /// Calls `f` with every entity client `id` should hold at `tick` and
    /// its values then, in network id order. `tick` must lie within the
    /// delta window (at most [`super::ServerConfig::delta_window`] ticks
    /// back, not after the newest tick). Interest is judged with the
    /// client's view now and each entity's position then.
    pub(crate) fn for_each_expected(
        &self,
        id: ClientId,
        tick: u32,
        mut f: impl FnMut(NetId, &[Option<Value>]),
    ) -> Result<(), CheckError> {
        let client = self.clients.get(&id).ok_or(CheckError::UnknownClient(id))?;
        let back = tick_diff(self.tick, tick);
        // Tick 0 is the newest only before the first update (nothing is
        // replicated yet).
        if tick == 0 && self.tick != 0 || !(0..=self.config.delta_window as i32).contains(&back) {
            return Err(CheckError::OutsideWindow { tick, newest: self.tick, window: self.config.delta_window });
        }
        let mut live: Vec<(NetId, &Record)> =
            self.changes.records.iter().filter(|(_, r)| !tick_newer(r.spawned, tick)).map(|(n, r)| (*n, r)).collect();
        // Gone after `tick`: the client should still hold them then.
        live.extend(
            self.changes
                .departed
                .iter()
                .filter(|(gone, _, r)| tick_newer(*gone, tick) && !tick_newer(r.spawned, tick))
                .map(|(_, n, r)| (*n, r)),
        );
        live.sort_unstable_by_key(|(n, _)| *n);
        let mut scratch = Vec::new();
        for (net, record) in live {
            let values: &[Option<Value>] = if record.undo.back().is_some_and(|(t, _, _)| tick_newer(*t, tick)) {
                record.state_at(tick, &mut scratch);
                &scratch
            } else {
                &record.values
            };
            if in_view_then(self, client.view, values) {
                f(net, values);
            }
        }
        Ok(())
    }
}
