//! The `spatial` scene on rstar 0.14: an [`RTree`] of `[f32; 3]` points
//! from `bulk_load`, `locate_within_distance` with the squared radius
//! (inclusive), counted.

use ::rstar::RTree;
use glam::Vec3;

use super::SpatialScene;

/// rstar's R*-tree over the scene's points.
pub struct RStar {
    points: Vec<[f32; 3]>,
    staged: Vec<[f32; 3]>,
    tree: RTree<[f32; 3]>,
    radius_sq: f32,
}

impl RStar {
    /// A tree over `points`, bulk-loaded once, for queries of `radius`.
    pub fn new(points: &[Vec3], radius: f32) -> Self {
        let mut s = Self {
            points: points.iter().map(|p| p.to_array()).collect(),
            staged: Vec::new(),
            tree: RTree::new(),
            radius_sq: radius * radius,
        };
        s.clear();
        s.build();
        s
    }
}

impl SpatialScene for RStar {
    /// Drops the tree and copies the points for `bulk_load`, which takes them by value.
    fn clear(&mut self) {
        self.tree = RTree::new();
        self.staged.clear();
        self.staged.extend_from_slice(&self.points);
    }

    fn build(&mut self) {
        self.tree = RTree::bulk_load(std::mem::take(&mut self.staged));
    }

    fn built_len(&self) -> Result<usize, String> {
        Ok(self.tree.size())
    }

    fn all_queries(&mut self) -> usize {
        self.points.iter().map(|&p| self.tree.locate_within_distance(p, self.radius_sq).count()).sum()
    }
}
