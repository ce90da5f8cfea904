//! The `spatial` scene on `ecs-spatial`: a [`SparseGrid`] whose cells are
//! as wide as the query radius, rebuilt from id and position slices.

use ecs_spatial::{NeighborLists, SparseGrid};
use glam::Vec3;

use super::SpatialScene;

/// Our sparse grid over the scene's points.
pub struct Grid {
    ids: Vec<u32>,
    positions: Vec<Vec3>,
    grid: SparseGrid<Vec3, u32>,
    lists: NeighborLists<u32>,
    radius: f32,
    error: Option<String>,
}

impl Grid {
    /// A grid over `points` (ids are the point indices) with cells of
    /// `radius`, for queries of `radius`, built once.
    ///
    /// # Errors
    /// If the grid rejects its configuration or a point.
    pub fn new(points: &[Vec3], radius: f32) -> Result<Self, String> {
        let grid = SparseGrid::new(Vec3::ZERO, radius).map_err(|e| format!("grid: {e}"))?;
        let ids: Result<Vec<u32>, String> =
            (0..points.len()).map(|i| u32::try_from(i).map_err(|_| "too many points".to_owned())).collect();
        let mut s =
            Self { ids: ids?, positions: points.to_vec(), grid, lists: NeighborLists::new(), radius, error: None };
        s.build();
        match s.error.take() {
            Some(e) => Err(e),
            None => Ok(s),
        }
    }
}

impl Grid {
    /// What the latest build chose (the lookup, compacted or not).
    pub fn stats(&self) -> ecs_spatial::GridStats {
        self.grid.stats()
    }
}

impl SpatialScene for Grid {
    /// A no-op: a rebuild reuses the grid's buffers (the steady state of a
    /// broad phase rebuilt every frame).
    fn clear(&mut self) {}

    fn build(&mut self) {
        if let Err(e) = self.grid.rebuild(&self.ids, &self.positions) {
            self.error = Some(format!("rebuild: {e}"));
        }
    }

    fn built_len(&self) -> Result<usize, String> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(self.grid.len()),
        }
    }

    /// `query_radius_all` (sequential): writes every neighbour list.
    fn all_queries(&mut self) -> usize {
        self.grid.query_radius_all(self.radius, &mut self.lists);
        self.lists.total_hits()
    }

    /// `for_each_pair_within`, the half-neighbour scan, counting.
    fn all_pairs(&mut self) -> Option<usize> {
        let mut pairs = 0;
        self.grid.for_each_pair_within(self.radius, |_, _| pairs += 1);
        Some(pairs)
    }
}
