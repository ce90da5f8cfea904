//! Access sets: which components a query or system reads and writes, used to
//! refuse conflicting borrows and to decide what may run in parallel.

use smallvec::SmallVec;

use crate::storage::component::{ComponentId, Components};

type Ids = SmallVec<[ComponentId; 8]>;

/// The components one query reads and writes, and the `With` / `Without`
/// constraints that can make two queries provably disjoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    reads: Ids,
    writes: Ids,
    with: Ids,
    without: Ids,
    /// Named by an [`Allow`](crate::query::Allow) filter: no constraint,
    /// so never part of a disjointness proof.
    allowed: Ids,
}

/// How two accesses collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConflictKind {
    /// Both borrow the component mutably.
    WriteWrite,
    /// One borrows it mutably, the other shared.
    ReadWrite,
}

impl ConflictKind {
    /// Words for messages.
    pub fn describe(self) -> &'static str {
        match self {
            ConflictKind::WriteWrite => "borrowed mutably twice",
            ConflictKind::ReadWrite => "borrowed both mutably and shared",
        }
    }
}

impl Access {
    /// Records a shared borrow. Fails if the component is already borrowed
    /// mutably in this access.
    pub fn add_read(&mut self, id: ComponentId) -> Result<(), ConflictKind> {
        if self.writes.contains(&id) {
            return Err(ConflictKind::ReadWrite);
        }
        if !self.reads.contains(&id) {
            self.reads.push(id);
        }
        Ok(())
    }

    /// Records a read of change ticks by a filter (`Changed<T>`,
    /// `Added<T>`). A write of the same component in the same query already
    /// covers it, so `Query<&mut T, Changed<T>>` is allowed.
    pub fn add_filter_read(&mut self, id: ComponentId) {
        if !self.writes.contains(&id) && !self.reads.contains(&id) {
            self.reads.push(id);
        }
    }

    /// Records a mutable borrow. Fails if the component is already borrowed
    /// in this access.
    pub fn add_write(&mut self, id: ComponentId) -> Result<(), ConflictKind> {
        if self.writes.contains(&id) {
            return Err(ConflictKind::WriteWrite);
        }
        if self.reads.contains(&id) {
            return Err(ConflictKind::ReadWrite);
        }
        self.writes.push(id);
        Ok(())
    }

    /// Records that matched entities must have `id`.
    pub fn add_with(&mut self, id: ComponentId) {
        if !self.with.contains(&id) {
            self.with.push(id);
        }
    }

    /// Records that matched entities must lack `id`.
    pub fn add_without(&mut self, id: ComponentId) {
        if !self.without.contains(&id) {
            self.without.push(id);
        }
    }

    /// Records that the query names `id` without narrowing what it matches
    /// (an [`Allow`](crate::query::Allow) filter).
    pub fn add_allowed(&mut self, id: ComponentId) {
        if !self.allowed.contains(&id) {
            self.allowed.push(id);
        }
    }

    /// Whether the query names `id` anywhere: read, written, or in a
    /// `With`, `Without` or `Allow` filter.
    pub fn mentions(&self, id: ComponentId) -> bool {
        self.reads.contains(&id)
            || self.writes.contains(&id)
            || self.with.contains(&id)
            || self.without.contains(&id)
            || self.allowed.contains(&id)
    }

    /// Components read.
    pub fn reads(&self) -> &[ComponentId] {
        &self.reads
    }

    /// Components written.
    pub fn writes(&self) -> &[ComponentId] {
        &self.writes
    }

    /// Whether no entity can match both accesses (one requires a component
    /// the other excludes).
    pub fn is_disjoint(&self, other: &Access) -> bool {
        self.with.iter().any(|c| other.without.contains(c)) || self.without.iter().any(|c| other.with.contains(c))
    }

    /// The first component two accesses (of different queries or systems)
    /// cannot both hold at once, or `None` if they may run together.
    pub fn conflict_with(&self, other: &Access) -> Option<(ComponentId, ConflictKind)> {
        if self.is_disjoint(other) {
            return None;
        }
        for &w in &self.writes {
            if other.writes.contains(&w) {
                return Some((w, ConflictKind::WriteWrite));
            }
            if other.reads.contains(&w) {
                return Some((w, ConflictKind::ReadWrite));
            }
        }
        other.writes.iter().find(|w| self.reads.contains(w)).map(|&w| (w, ConflictKind::ReadWrite))
    }

    /// Merges `other` into `self` as one combined access (a system with
    /// several parameters). Constraints are dropped: the union of two
    /// queries is not as narrow as either.
    pub fn extend(&mut self, other: &Access) {
        for &r in &other.reads {
            if !self.reads.contains(&r) {
                self.reads.push(r);
            }
        }
        for &w in &other.writes {
            if !self.writes.contains(&w) {
                self.writes.push(w);
            }
        }
    }

    /// Names of the components, for messages.
    pub fn describe(&self, components: &Components) -> String {
        let names = |ids: &Ids| ids.iter().map(|&c| components.info(c).name()).collect::<Vec<_>>().join(", ");
        format!("reads [{}], writes [{}]", names(&self.reads), names(&self.writes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component)]
    struct A;
    #[derive(crate::Component)]
    struct B;

    #[test]
    fn conflicts_inside_one_access() {
        let mut c = Components::default();
        let a = c.register::<A>();
        let mut acc = Access::default();
        acc.add_write(a).unwrap();
        assert_eq!(acc.add_read(a), Err(ConflictKind::ReadWrite));
        assert_eq!(acc.add_write(a), Err(ConflictKind::WriteWrite));
    }

    #[test]
    fn with_without_makes_disjoint() {
        let mut c = Components::default();
        let (a, b) = (c.register::<A>(), c.register::<B>());
        let mut x = Access::default();
        x.add_write(a).unwrap();
        x.add_with(b);
        let mut y = Access::default();
        y.add_write(a).unwrap();
        assert_eq!(x.conflict_with(&y), Some((a, ConflictKind::WriteWrite)));
        y.add_without(b);
        assert_eq!(x.conflict_with(&y), None);
    }

    #[test]
    fn allow_names_a_component_without_making_anything_disjoint() {
        let mut c = Components::default();
        let (a, b) = (c.register::<A>(), c.register::<B>());
        let mut x = Access::default();
        x.add_write(a).unwrap();
        x.add_allowed(b);
        assert!(x.mentions(b));
        let mut y = Access::default();
        y.add_write(a).unwrap();
        y.add_without(b);
        // `x` matches entities without `b` too: the two still collide.
        assert_eq!(x.conflict_with(&y), Some((a, ConflictKind::WriteWrite)));
        assert_eq!(y.conflict_with(&x), Some((a, ConflictKind::WriteWrite)));
    }
}
