//! The `spatial` scenario: a broad phase over 100k points, ours
//! (`ecs-spatial`'s [`SparseGrid`](ecs_spatial::SparseGrid)) against kiddo's
//! immutable k-d tree and rstar's R*-tree (feature `peers`), all on one
//! thread.
//!
//! Every implementation gets the same points from [`points`] (a fixed-seed
//! [`SplitMix64`], no RNG crate) and answers the same questions: build the
//! structure, then a radius query around every point (hits counted, each
//! point finds itself), for each [`SpatialSet`] of [`SPATIAL_SETS`] (a
//! distribution and a radius; our cell size is the radius). The test is
//! `distance^2 <= r^2` everywhere. Coordinates are multiples of
//! [`QUANTUM`] (1/256), so every squared distance that can decide a hit is
//! exact in `f32` whatever the order of the arithmetic: the implementations
//! must agree *exactly*, ties at the boundary included, and the runner fails
//! on any difference.

use glam::Vec3;

pub mod ecs;
pub mod ours;

#[cfg(feature = "peers")]
pub mod kiddo;
#[cfg(feature = "peers")]
pub mod rstar;

/// Points per distribution.
pub const SPATIAL_POINTS: usize = 100_000;
/// Edge of the cube the points lie in (`[0, SPATIAL_SIDE)` per axis).
pub const SPATIAL_SIDE: f32 = 200.0;
/// Query radius.
pub const SPATIAL_RADIUS: f32 = 5.0;
/// Cell edge of our grid (equal to the radius).
pub const SPATIAL_CELL: f32 = 5.0;
/// Seed of the point generator.
pub const SPATIAL_SEED: u64 = 0x5EED_0000_B20A_D000;
/// Grid of the coordinates: every coordinate is a multiple of this (1/256).
/// Differences of at most a few radii then have 12 significant bits, their
/// squares 24, so squared distances up to well past `r^2` are exact in `f32`.
pub const QUANTUM: f32 = 1.0 / 256.0;
/// Clusters of the clustered distribution.
pub const CLUSTERS: usize = 100;
/// Radius of each cluster's ball (uniform inside it).
pub const CLUSTER_RADIUS: f32 = 15.0;
/// Clusters of the clustered-sparse distribution.
pub const SPARSE_CLUSTERS: usize = 200;
/// Standard deviation of each clustered-sparse cluster (Gaussian, per axis).
pub const SPARSE_SIGMA: f32 = 3.0;
/// Edge of the clustered-sparse box (`[0, SPARSE_SIDE)` per axis).
pub const SPARSE_SIDE: f32 = 400.0;
/// Far points of the outliers distribution (the rest is uniform in the cube).
pub const OUTLIERS: usize = 16;
/// How far the outliers go from the cube, per axis, at most.
pub const OUTLIER_REACH: f32 = 90_000.0;

/// `SPATIAL_RADIUS^2`, the bound every implementation compares squared distances with.
pub const SPATIAL_RADIUS_SQ: f32 = SPATIAL_RADIUS * SPATIAL_RADIUS;

/// How the points are spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Uniform in the `SPATIAL_SIDE^3` cube.
    Uniform,
    /// [`CLUSTERS`] balls of radius [`CLUSTER_RADIUS`] with centres uniform
    /// in the cube (kept inside it), the points uniform in the balls, spread
    /// round-robin over them.
    Clustered,
    /// Many small clusters in a large box: [`SPARSE_CLUSTERS`] Gaussian
    /// clusters (sigma [`SPARSE_SIGMA`]) with centres uniform in the
    /// [`SPARSE_SIDE`]^3 box, the points spread round-robin over them and
    /// clamped into the box. The occupied cells' bounding box holds millions
    /// of cells, nearly all empty.
    ClusteredSparse,
    /// The uniform cube with [`OUTLIERS`] of its points moved up to
    /// [`OUTLIER_REACH`] away on every axis: a few far points stretch the
    /// bounding box to about 10^14 cells.
    Outliers,
}

impl Distribution {
    /// Every distribution, in report order.
    pub const ALL: [Distribution; 4] =
        [Distribution::Uniform, Distribution::Clustered, Distribution::ClusteredSparse, Distribution::Outliers];
}

/// One set of points and the radius of its queries (our grid's cell size
/// is the radius).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialSet {
    /// Prefix of the set's case names.
    pub name: &'static str,
    /// The points.
    pub distribution: Distribution,
    /// Query radius, and our cell size.
    pub radius: f32,
}

/// The sets of the `spatial` scenario, in report order.
pub const SPATIAL_SETS: [SpatialSet; 6] = [
    SpatialSet { name: "uniform", distribution: Distribution::Uniform, radius: SPATIAL_RADIUS },
    SpatialSet { name: "clustered", distribution: Distribution::Clustered, radius: SPATIAL_RADIUS },
    SpatialSet { name: "sparse_r2", distribution: Distribution::ClusteredSparse, radius: 2.0 },
    SpatialSet { name: "sparse_r4", distribution: Distribution::ClusteredSparse, radius: 4.0 },
    SpatialSet { name: "outliers_r5", distribution: Distribution::Outliers, radius: 5.0 },
    SpatialSet { name: "outliers_r10", distribution: Distribution::Outliers, radius: 10.0 },
];

/// What one `spatial` case times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpatialOp {
    /// Build the structure from the points (ours: a rebuild reusing the
    /// grid's buffers; kiddo: `ImmutableKdTree::new_from_slice`; rstar:
    /// `RTree::bulk_load`). Dropping the previous structure is untimed.
    Build,
    /// A radius query around every point, hits counted.
    AllQueries,
    /// Ours only: every pair within the radius (half-neighbour scan), counted.
    AllPairs,
    /// Ours only, a reference: `sort_unstable` of 100k `(cell, index)` pairs.
    StdSort,
    /// Ours only, the broad-phase system ([`ecs::EcsBroadPhase`]): a frame
    /// where nothing moved.
    SystemNothingMoved,
    /// Ours only, the broad-phase system: a frame where 5 % of the entities
    /// moved (written untimed before the frame).
    SystemFivePercentMoved,
    /// Ours only, the broad-phase system: a frame where every entity moved,
    /// so the system rebuilds from all rows.
    SystemAllMoved,
}

/// One case of the `spatial` scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpatialCase {
    /// Case name as reported (`uniform_build`, ...).
    pub name: &'static str,
    /// Index of the case's set in [`SPATIAL_SETS`].
    pub set: usize,
    /// The timed work.
    pub op: SpatialOp,
}

macro_rules! spatial_cases {
    ($($name:literal $set:literal $op:ident),* $(,)?) => {
        /// The `spatial` cases, in report order (the broad-phase system and
        /// the sort reference run on the uniform and clustered sets).
        pub const SPATIAL_CASES: [SpatialCase; 26] = [
            $(SpatialCase { name: $name, set: $set, op: SpatialOp::$op },)*
        ];
    };
}

spatial_cases!(
    "uniform_build" 0 Build, "uniform_all_queries" 0 AllQueries,
    "uniform_all_pairs" 0 AllPairs, "uniform_std_sort" 0 StdSort,
    "uniform_nothing" 0 SystemNothingMoved, "uniform_5pct" 0 SystemFivePercentMoved,
    "uniform_all" 0 SystemAllMoved,
    "clustered_build" 1 Build, "clustered_all_queries" 1 AllQueries,
    "clustered_all_pairs" 1 AllPairs, "clustered_std_sort" 1 StdSort,
    "clustered_nothing" 1 SystemNothingMoved, "clustered_5pct" 1 SystemFivePercentMoved,
    "clustered_all" 1 SystemAllMoved,
    "sparse_r2_build" 2 Build, "sparse_r2_all_queries" 2 AllQueries, "sparse_r2_all_pairs" 2 AllPairs,
    "sparse_r4_build" 3 Build, "sparse_r4_all_queries" 3 AllQueries, "sparse_r4_all_pairs" 3 AllPairs,
    "outliers_r5_build" 4 Build, "outliers_r5_all_queries" 4 AllQueries, "outliers_r5_all_pairs" 4 AllPairs,
    "outliers_r10_build" 5 Build, "outliers_r10_all_queries" 5 AllQueries, "outliers_r10_all_pairs" 5 AllPairs,
);

/// SplitMix64: a tiny, well-mixed deterministic generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; the bias is below 2^-32 for the
    /// small `n` used here).
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// Uniform in `(0, 1]`.
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal deviate (Box-Muller).
    pub fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// Coordinates per axis: `[0, SPATIAL_SIDE)` in steps of [`QUANTUM`].
const STEPS: u32 = 200 * 256;

fn lattice(steps: i64) -> f32 {
    steps as f32 * QUANTUM
}

/// The points of `distribution` (deterministic: [`SPATIAL_SEED`]).
pub fn points(distribution: Distribution) -> Vec<Vec3> {
    let mut rng = SplitMix64::new(SPATIAL_SEED ^ distribution as u64);
    let coord = |rng: &mut SplitMix64| i64::from(rng.below(STEPS));
    match distribution {
        Distribution::Uniform => (0..SPATIAL_POINTS)
            .map(|_| {
                let (x, y, z) = (coord(&mut rng), coord(&mut rng), coord(&mut rng));
                Vec3::new(lattice(x), lattice(y), lattice(z))
            })
            .collect(),
        Distribution::Clustered => {
            let r = (CLUSTER_RADIUS / QUANTUM) as i64;
            let span = STEPS as i64 - 2 * r;
            let centres: Vec<[i64; 3]> =
                (0..CLUSTERS).map(|_| [0; 3].map(|_| r + i64::from(rng.below(span as u32)))).collect();
            (0..SPATIAL_POINTS)
                .map(|i| {
                    let c = centres[i % CLUSTERS];
                    // Rejection sampling of a lattice offset in the ball.
                    let o = loop {
                        let o = [0; 3].map(|_| i64::from(rng.below(2 * r as u32 + 1)) - r);
                        if o.iter().map(|v| v * v).sum::<i64>() <= r * r {
                            break o;
                        }
                    };
                    Vec3::new(lattice(c[0] + o[0]), lattice(c[1] + o[1]), lattice(c[2] + o[2]))
                })
                .collect()
        }
        Distribution::ClusteredSparse => {
            let steps = (SPARSE_SIDE / QUANTUM) as u32;
            let centres: Vec<[f64; 3]> = (0..SPARSE_CLUSTERS)
                .map(|_| [0; 3].map(|_| f64::from(rng.below(steps)) * f64::from(QUANTUM)))
                .collect();
            (0..SPATIAL_POINTS)
                .map(|i| {
                    let c = centres[i % SPARSE_CLUSTERS];
                    let v = c.map(|c| {
                        let q = ((c + rng.gaussian() * f64::from(SPARSE_SIGMA)) / f64::from(QUANTUM)).round() as i64;
                        lattice(q.clamp(0, i64::from(steps) - 1))
                    });
                    Vec3::from_array(v)
                })
                .collect()
        }
        Distribution::Outliers => {
            let mut pts: Vec<Vec3> = (0..SPATIAL_POINTS)
                .map(|_| {
                    let (x, y, z) = (coord(&mut rng), coord(&mut rng), coord(&mut rng));
                    Vec3::new(lattice(x), lattice(y), lattice(z))
                })
                .collect();
            // Whole coordinates out there (exact in f32, multiples of QUANTUM).
            let reach = OUTLIER_REACH as u32;
            for k in 0..OUTLIERS {
                let far = |rng: &mut SplitMix64, bit: usize| {
                    let d = (reach / 2 + rng.below(reach / 2)) as f32;
                    if k >> bit & 1 == 1 { SPATIAL_SIDE + d } else { -d }
                };
                let p = Vec3::new(far(&mut rng, 0), far(&mut rng, 1), far(&mut rng, 2));
                pts[k * (SPATIAL_POINTS / OUTLIERS)] = p;
            }
            pts
        }
    }
}

/// A broad-phase structure under test: built from the scene's points, then
/// queried around every point.
pub trait SpatialScene {
    /// Untimed: drops the structure built last (a no-op where a rebuild
    /// reuses it, as ours does) and stages the input.
    fn clear(&mut self);

    /// Timed: builds the structure from the points.
    fn build(&mut self);

    /// Points in the structure, or why the last build failed.
    fn built_len(&self) -> Result<usize, String>;

    /// Timed: a radius query around every point (the radius the structure
    /// was made for); returns the total number of hits.
    fn all_queries(&mut self) -> usize;

    /// Timed, where the implementation has it: the number of unordered
    /// pairs of distinct points within the radius.
    fn all_pairs(&mut self) -> Option<usize> {
        None
    }
}

/// The `std_sort` reference: `sort_unstable` of one `(cell, index)` pair
/// per point, the cell linearised from the points' [`SPATIAL_CELL`] grid
/// (points in the [`SPATIAL_SIDE`] cube).
#[derive(Clone, Debug)]
pub struct SortPairs {
    input: Vec<(u32, u32)>,
    work: Vec<(u32, u32)>,
}

impl SortPairs {
    /// The pairs of `points`, unsorted (in point order).
    pub fn new(points: &[Vec3]) -> Self {
        let per_axis = (SPATIAL_SIDE / SPATIAL_CELL) as u32;
        let cell = |v: f32| ((v / SPATIAL_CELL) as u32).min(per_axis - 1);
        let input: Vec<(u32, u32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (cell(p.x) + per_axis * (cell(p.y) + per_axis * cell(p.z)), i as u32))
            .collect();
        Self { work: input.clone(), input }
    }

    /// Untimed: copies the unsorted pairs into the work buffer.
    pub fn reset(&mut self) {
        self.work.clear();
        self.work.extend_from_slice(&self.input);
    }

    /// Timed: sorts the work buffer.
    pub fn sort(&mut self) {
        self.work.sort_unstable();
    }

    /// Untimed: whether the work buffer is sorted and holds every pair.
    pub fn check(&self) -> Result<(), String> {
        if self.work.len() != self.input.len() {
            return Err(format!("{} pairs after the sort, expected {}", self.work.len(), self.input.len()));
        }
        if !self.work.is_sorted() {
            return Err("the pairs are not sorted".to_owned());
        }
        Ok(())
    }
}

/// Runs the untimed checks of one distribution's scenes (the first must be
/// ours): each holds every point after a build, all report the same number
/// of hits for the radius queries, and ours' pairs satisfy
/// `pairs * 2 + n == hits`. Returns the hits.
pub fn check_scenes<'a, 's: 'a>(
    n: usize,
    scenes: impl IntoIterator<Item = (&'a str, &'a mut (dyn SpatialScene + 's))>,
) -> Result<usize, String> {
    let mut expected: Option<(&str, usize)> = None;
    for (name, scene) in scenes {
        scene.clear();
        scene.build();
        let len = scene.built_len().map_err(|e| format!("{name}: build failed: {e}"))?;
        if len != n {
            return Err(format!("{name}: the structure holds {len} points, expected {n}"));
        }
        let hits = scene.all_queries();
        match expected {
            None => expected = Some((name, hits)),
            Some((first, want)) if want != hits => {
                return Err(format!("{name}: {hits} hits in all queries, {first} found {want}"));
            }
            Some(_) => {}
        }
        if let Some(pairs) = scene.all_pairs() {
            check_pairs(n, hits, pairs).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    expected.map(|(_, h)| h).ok_or_else(|| "no implementation to check".to_owned())
}

/// `pairs * 2 + n == hits`: every pair is found from both ends, and every
/// point finds itself.
pub fn check_pairs(n: usize, hits: usize, pairs: usize) -> Result<(), String> {
    if pairs * 2 + n != hits {
        return Err(format!("{pairs} pairs * 2 + {n} points != {hits} hits of all queries"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(points: &[Vec3], center: Vec3) -> usize {
        points.iter().filter(|p| p.distance_squared(center) <= SPATIAL_RADIUS_SQ).count()
    }

    fn scenes_of(points: &[Vec3], radius: f32) -> Vec<(&'static str, Box<dyn SpatialScene>)> {
        #[allow(unused_mut, reason = "only the peers feature pushes more scenes")]
        let mut scenes: Vec<(&'static str, Box<dyn SpatialScene>)> =
            vec![("ours", Box::new(ours::Grid::new(points, radius).expect("valid points")))];
        #[cfg(feature = "peers")]
        {
            scenes.push(("kiddo", Box::new(kiddo::KdTree::new(points, radius))));
            scenes.push(("rstar", Box::new(rstar::RStar::new(points, radius))));
        }
        scenes
    }

    fn brute_force_r(points: &[Vec3], center: Vec3, r: f32) -> usize {
        points.iter().filter(|p| p.distance_squared(center) <= r * r).count()
    }

    #[test]
    fn points_are_deterministic_on_the_lattice_and_in_the_cube() {
        for d in [Distribution::Uniform, Distribution::Clustered] {
            let a = points(d);
            assert_eq!(a, points(d));
            assert_eq!(a.len(), SPATIAL_POINTS);
            for p in &a {
                for v in p.to_array() {
                    assert!((0.0..SPATIAL_SIDE).contains(&v), "{p}");
                    assert_eq!((v / QUANTUM).fract(), 0.0, "{p}");
                }
            }
        }
        assert_ne!(points(Distribution::Uniform), points(Distribution::Clustered));
    }

    #[test]
    fn sparse_and_outlier_points_are_as_described() {
        let sparse = points(Distribution::ClusteredSparse);
        assert_eq!(sparse, points(Distribution::ClusteredSparse));
        assert_eq!(sparse.len(), SPATIAL_POINTS);
        for p in &sparse {
            for v in p.to_array() {
                assert!((0.0..SPARSE_SIDE).contains(&v), "{p}");
                assert_eq!((v / QUANTUM).fract(), 0.0, "{p}");
            }
        }
        let outliers = points(Distribution::Outliers);
        assert_eq!(outliers.len(), SPATIAL_POINTS);
        let far = outliers.iter().filter(|p| p.abs().max_element() > 2.0 * SPATIAL_SIDE).count();
        assert_eq!(far, OUTLIERS);
        assert!(outliers.iter().all(|p| p.abs().max_element() <= OUTLIER_REACH + SPATIAL_SIDE));
    }

    #[test]
    fn boundary_ties_count_for_every_implementation() {
        // Exactly at the radius: (5,0,0), (3,4,0), (0,3,4); just outside: (3,4,QUANTUM).
        let pts = vec![
            Vec3::new(10.0, 10.0, 10.0),
            Vec3::new(15.0, 10.0, 10.0),
            Vec3::new(13.0, 14.0, 10.0),
            Vec3::new(10.0, 13.0, 14.0),
            Vec3::new(7.0, 6.0, 10.0 + QUANTUM),
        ];
        let want: usize = pts.iter().map(|&c| brute_force(&pts, c)).sum();
        assert_eq!(brute_force(&pts, pts[0]), 4);
        let mut scenes = scenes_of(&pts, SPATIAL_RADIUS);
        let hits = check_scenes(pts.len(), scenes.iter_mut().map(|(n, s)| (*n, &mut **s))).unwrap();
        assert_eq!(hits, want);
    }

    #[test]
    fn every_implementation_agrees_with_brute_force_on_a_subset() {
        for set in SPATIAL_SETS {
            // Every 50th point: 2000 points, brute force is cheap.
            let pts: Vec<Vec3> = points(set.distribution).into_iter().step_by(50).collect();
            let want: usize = pts.iter().map(|&c| brute_force_r(&pts, c, set.radius)).sum();
            assert!(want > pts.len(), "{}: the subset has no neighbours", set.name);
            let mut scenes = scenes_of(&pts, set.radius);
            let hits = check_scenes(pts.len(), scenes.iter_mut().map(|(n, s)| (*n, &mut **s))).unwrap();
            assert_eq!(hits, want, "{}", set.name);
        }
    }

    #[test]
    fn cases_name_their_set() {
        for case in SPATIAL_CASES {
            assert!(case.name.starts_with(SPATIAL_SETS[case.set].name), "{}", case.name);
        }
    }

    #[test]
    fn sort_pairs_sorts() {
        let mut s = SortPairs::new(&points(Distribution::Clustered)[..1000]);
        s.reset();
        assert!(s.check().is_err());
        s.sort();
        s.check().unwrap();
    }

    /// A structure that finds one hit too many.
    struct OffByOne(ours::Grid);

    impl SpatialScene for OffByOne {
        fn clear(&mut self) {}
        fn build(&mut self) {
            self.0.build();
        }
        fn built_len(&self) -> Result<usize, String> {
            self.0.built_len()
        }
        fn all_queries(&mut self) -> usize {
            self.0.all_queries() + 1
        }
    }

    #[test]
    fn check_rejects_a_disagreeing_implementation() {
        let pts: Vec<Vec3> = points(Distribution::Uniform).into_iter().take(500).collect();
        let mut a = ours::Grid::new(&pts, SPATIAL_RADIUS).unwrap();
        let mut b = OffByOne(ours::Grid::new(&pts, SPATIAL_RADIUS).unwrap());
        let err = check_scenes(pts.len(), [("ours", &mut a as &mut dyn SpatialScene), ("off", &mut b)]).unwrap_err();
        assert!(err.contains("off") && err.contains("hits"), "{err}");
        let mut a = ours::Grid::new(&pts, SPATIAL_RADIUS).unwrap();
        assert!(check_scenes(pts.len() + 1, [("ours", &mut a as &mut dyn SpatialScene)]).is_err());
    }

    #[test]
    fn pair_check_rejects_mismatches() {
        assert!(check_pairs(10, 30, 10).is_ok());
        assert!(check_pairs(10, 31, 10).is_err());
    }
}
