//! [`GridPositions`]: a grid's sorted points, read from its coordinate arrays.

use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::ops::Range;

use glam::Vec3;

use crate::point::GridPoint;

/// The points of a [`SparseGrid`](crate::SparseGrid) in its sorted order
/// (all of them, or one cell's), by value.
///
/// The grid keeps each coordinate in its own array (the layout its
/// distance tests read), not a slice of points: a build writes each point
/// once, not twice. This view reads a point back from the three arrays
/// with [`GridPoint::from_vec3`], bit for bit the point that was stored.
///
/// ```
/// use ecs_spatial::SparseGrid;
/// use glam::Vec2;
///
/// let mut grid = SparseGrid::<Vec2, u32>::new(Vec2::ZERO, 1.0).unwrap();
/// grid.rebuild(&[7, 8], &[Vec2::new(5.5, 0.0), Vec2::new(0.5, 0.0)]).unwrap();
/// let positions = grid.positions();
/// assert_eq!(positions.len(), 2);
/// // Sorted by cell: the point at x = 0.5 (id 8) comes first.
/// assert_eq!(positions.get(0), Some(Vec2::new(0.5, 0.0)));
/// assert_eq!(positions.get(2), None);
/// let pairs: Vec<(u32, Vec2)> = grid.ids().iter().copied().zip(positions).collect();
/// assert_eq!(pairs, vec![(8, Vec2::new(0.5, 0.0)), (7, Vec2::new(5.5, 0.0))]);
/// ```
pub struct GridPositions<'a, P> {
    x: &'a [f32],
    y: &'a [f32],
    z: &'a [f32],
    point: PhantomData<fn() -> P>,
}

impl<P> Clone for GridPositions<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for GridPositions<'_, P> {}

impl<'a, P: GridPoint> GridPositions<'a, P> {
    /// The points `range` of three coordinate arrays (each at least
    /// `range.end` long).
    pub(crate) fn new(x: &'a [f32], y: &'a [f32], z: &'a [f32], range: Range<usize>) -> Self {
        Self { x: &x[range.clone()], y: &y[range.clone()], z: &z[range], point: PhantomData }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Point `i`, or `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<P> {
        Some(P::from_vec3(Vec3::new(*self.x.get(i)?, *self.y.get(i)?, *self.z.get(i)?)))
    }

    /// The points `range` of this view, or `None` if it is out of bounds or
    /// decreasing.
    pub fn slice(&self, range: Range<usize>) -> Option<Self> {
        (range.start <= range.end && range.end <= self.len()).then(|| Self::new(self.x, self.y, self.z, range))
    }

    /// The points in order.
    pub fn iter(&self) -> GridPositionsIter<'a, P> {
        GridPositionsIter { view: *self, front: 0, back: self.len() }
    }

    /// The points, collected.
    pub fn to_vec(&self) -> Vec<P> {
        self.iter().collect()
    }
}

impl<P: GridPoint> fmt::Debug for GridPositions<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<P: GridPoint> PartialEq for GridPositions<'_, P> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a, P: GridPoint> IntoIterator for GridPositions<'a, P> {
    type Item = P;
    type IntoIter = GridPositionsIter<'a, P>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, P: GridPoint> IntoIterator for &GridPositions<'a, P> {
    type Item = P;
    type IntoIter = GridPositionsIter<'a, P>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The iterator of [`GridPositions`]: its points by value, in order.
#[derive(Clone, Debug)]
pub struct GridPositionsIter<'a, P: GridPoint> {
    view: GridPositions<'a, P>,
    front: usize,
    back: usize,
}

impl<P: GridPoint> Iterator for GridPositionsIter<'_, P> {
    type Item = P;

    #[inline]
    fn next(&mut self) -> Option<P> {
        if self.front == self.back {
            return None;
        }
        let p = self.view.get(self.front);
        self.front += 1;
        p
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<P> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl<P: GridPoint> DoubleEndedIterator for GridPositionsIter<'_, P> {
    fn next_back(&mut self) -> Option<P> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        self.view.get(self.back)
    }
}

impl<P: GridPoint> ExactSizeIterator for GridPositionsIter<'_, P> {}

impl<P: GridPoint> FusedIterator for GridPositionsIter<'_, P> {}

#[cfg(test)]
mod tests {
    use glam::{Vec2, Vec3};

    use super::GridPositions;

    #[test]
    fn a_view_reads_back_its_points_by_index_slice_and_both_ends() {
        let (x, y, z) = ([1.0, 2.0, 3.0, -0.0], [4.0, 5.0, 6.0, f32::MIN], [7.0, 8.0, 9.0, 0.5]);
        let all = GridPositions::<Vec3>::new(&x, &y, &z, 0..4);
        assert_eq!(all.len(), 4);
        assert_eq!(all.get(1), Some(Vec3::new(2.0, 5.0, 8.0)));
        assert_eq!(all.get(4), None);
        // Bit for bit, a negative zero included.
        assert_eq!(all.get(3).map(|p| p.x.to_bits()), Some((-0.0f32).to_bits()));
        let mid = all.slice(1..3).unwrap();
        assert_eq!(mid.to_vec(), vec![Vec3::new(2.0, 5.0, 8.0), Vec3::new(3.0, 6.0, 9.0)]);
        assert!(all.slice(2..5).is_none());
        let (three, two) = (3, 2);
        assert!(all.slice(three..two).is_none());
        assert!(all.slice(4..4).unwrap().is_empty());
        let mut it = all.iter();
        assert_eq!(it.len(), 4);
        assert_eq!(it.next_back(), Some(Vec3::new(-0.0, f32::MIN, 0.5)));
        assert_eq!(it.nth(1), Some(Vec3::new(2.0, 5.0, 8.0)));
        assert_eq!(it.len(), 1);
        assert_eq!(it.next(), Some(Vec3::new(3.0, 6.0, 9.0)));
        assert_eq!((it.next(), it.next_back()), (None, None));
        assert_eq!(all.iter().rev().count(), 4);
        let flat = GridPositions::<Vec2>::new(&x, &y, &z, 0..2);
        assert_eq!(flat.to_vec(), vec![Vec2::new(1.0, 4.0), Vec2::new(2.0, 5.0)]);
        assert_eq!(format!("{flat:?}"), format!("{:?}", [Vec2::new(1.0, 4.0), Vec2::new(2.0, 5.0)]));
        assert_eq!(all.slice(0..2).unwrap(), all.slice(0..2).unwrap());
        assert_ne!(all.slice(0..2).unwrap(), all.slice(1..3).unwrap());
    }
}
