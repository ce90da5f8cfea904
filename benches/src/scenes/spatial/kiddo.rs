//! The `spatial` scene on kiddo 6.3: an [`ImmutableKdTree`] (built on one
//! thread: kiddo's `multi-threaded` feature is off), exact unsorted radius
//! queries with [`SquaredEuclidean`] and `r^2`, inclusive boundary, visited
//! and counted without collecting a result vector.

use ::kiddo::{ImmutableKdTree, SquaredEuclidean};
use glam::Vec3;

use super::SpatialScene;

/// kiddo's immutable k-d tree over the scene's points.
pub struct KdTree {
    points: Vec<[f32; 3]>,
    tree: Option<ImmutableKdTree<f32, 3>>,
    radius_sq: f32,
    error: Option<String>,
}

impl KdTree {
    /// A tree over `points` (items are the point indices), built once, for
    /// queries of `radius`.
    pub fn new(points: &[Vec3], radius: f32) -> Self {
        let mut s = Self {
            points: points.iter().map(|p| p.to_array()).collect(),
            tree: None,
            radius_sq: radius * radius,
            error: None,
        };
        s.build();
        s
    }
}

impl SpatialScene for KdTree {
    fn clear(&mut self) {
        self.tree = None;
    }

    fn build(&mut self) {
        match ImmutableKdTree::new_from_slice(&self.points) {
            Ok(tree) => self.tree = Some(tree),
            Err(e) => self.error = Some(format!("new_from_slice: {e:?}")),
        }
    }

    fn built_len(&self) -> Result<usize, String> {
        match (&self.error, &self.tree) {
            (Some(e), _) => Err(e.clone()),
            (None, Some(tree)) => Ok(tree.size()),
            (None, None) => Err("no tree built".to_owned()),
        }
    }

    fn all_queries(&mut self) -> usize {
        let Some(tree) = &self.tree else {
            return 0;
        };
        let mut scratch = tree.create_scratch::<SquaredEuclidean<f32>>();
        let mut hits = 0;
        for p in &self.points {
            tree.query(p)
                .within::<SquaredEuclidean<f32>>(self.radius_sq)
                .unsorted()
                .with_scratch(&mut scratch)
                .visit(|_| hits += 1);
        }
        hits
    }
}
