//! Events: double-buffered messages between systems.
//!
//! Every reader sees each event once. Events live for two updates
//! ([`World::update_events`](crate::World::update_events), called at the start of each schedule run): one
//! sent in frame N is readable in frames N and N + 1 and dropped at the
//! start of N + 2. A reader that did not run in those two frames misses it
//! and can tell how many it missed from [`EventReader::missed`].

/// The stored events of type `E` (a resource; see
/// [`World::add_event`](crate::World::add_event)).
#[derive(Debug)]
pub struct Events<E> {
    /// Events sent before the last update.
    older: Vec<(u64, E)>,
    /// Events sent since the last update.
    newer: Vec<(u64, E)>,
    next_id: u64,
}

impl<E> Default for Events<E> {
    fn default() -> Self {
        Events { older: Vec::new(), newer: Vec::new(), next_id: 0 }
    }
}

impl<E> Events<E> {
    /// Queues an event for every reader.
    pub fn send(&mut self, event: E) {
        self.newer.push((self.next_id, event));
        self.next_id += 1;
    }

    /// Drops the events older than two updates.
    pub fn update(&mut self) {
        std::mem::swap(&mut self.older, &mut self.newer);
        self.newer.clear();
    }

    /// Events currently stored.
    pub fn len(&self) -> usize {
        self.older.len() + self.newer.len()
    }

    /// Whether no event is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Stored events with id at least `cursor`, oldest first.
    pub fn read_from(&self, cursor: u64) -> impl Iterator<Item = &E> {
        self.older.iter().chain(self.newer.iter()).filter(move |(id, _)| *id >= cursor).map(|(_, e)| e)
    }

    fn oldest_id(&self) -> u64 {
        self.older.first().or(self.newer.first()).map_or(self.next_id, |(id, _)| *id)
    }
}

/// Reads events of type `E` in a system; each reader has its own cursor.
pub struct EventReader<'w, 's, E: Send + Sync + 'static> {
    pub(crate) events: &'w Events<E>,
    pub(crate) cursor: &'s mut u64,
}

impl<E: Send + Sync + 'static> EventReader<'_, '_, E> {
    /// The events this reader has not seen yet, oldest first.
    pub fn read(&mut self) -> impl Iterator<Item = &E> {
        let from = *self.cursor;
        *self.cursor = self.events.next_id();
        self.events.read_from(from)
    }

    /// How many events were dropped before this reader saw them.
    pub fn missed(&self) -> u64 {
        self.events.oldest_id().saturating_sub(*self.cursor)
    }
}

/// Sends events of type `E` from a system.
pub struct EventWriter<'w, E: Send + Sync + 'static> {
    pub(crate) events: &'w mut Events<E>,
}

impl<E: Send + Sync + 'static> EventWriter<'_, E> {
    /// Sends one event.
    pub fn send(&mut self, event: E) {
        self.events.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;

    #[test]
    fn events_live_two_updates_and_each_reader_sees_each_once() {
        let mut world = World::new();
        world.add_event::<u32>();
        world.resource_mut::<Events<u32>>().unwrap().send(1);
        let (mut fast, mut slow) = (0u64, 0u64);
        let read = |world: &World, cursor: &mut u64| -> Vec<u32> {
            let events = world.resource::<Events<u32>>().unwrap();
            let mut r = EventReader { events, cursor };
            r.read().copied().collect()
        };
        assert_eq!(read(&world, &mut fast), vec![1]);
        assert_eq!(read(&world, &mut fast), Vec::<u32>::new());
        world.update_events();
        world.resource_mut::<Events<u32>>().unwrap().send(2);
        assert_eq!(read(&world, &mut fast), vec![2]);
        world.update_events();
        assert_eq!(read(&world, &mut slow), vec![2], "1 was dropped after two updates");
        world.update_events();
        assert!(world.resource::<Events<u32>>().unwrap().is_empty());
        let events = world.resource::<Events<u32>>().unwrap();
        let mut late = 0u64;
        assert_eq!(EventReader { events, cursor: &mut late }.missed(), 2);
    }
}
