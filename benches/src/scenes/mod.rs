//! Scene definitions, one module per ECS implementation.
//!
//! Every implementation builds the *same* scenes from the constants and
//! initial values defined here, so the CLI and the criterion benches compare
//! identical work. [`ours`] is this workspace's `ecs-core`; `bevy` and `hecs`
//! (feature `peers`) are the reference implementations.
//!
//! Suite scenes implement [`Frame`]; change-detection scenes implement
//! [`SkipScene`]; the system-schedule scenes implement [`ScheduleScene`],
//! and the app frames of the same scenario live in [`app`] (ours against
//! `bevy_app`);
//! the hierarchy-propagation scenes live in [`transform`] (ours against
//! `bevy_transform`), the broad-phase scenes in [`spatial`] (ours against
//! kiddo and rstar), the whole-frame game scene in [`game`] (ours against
//! bevy's App, time and transform crates).

use glam::{Mat4, Vec3};

pub mod app;
pub mod game;
pub mod ours;
pub mod replication;

#[cfg(feature = "peers")]
pub mod bevy;
#[cfg(feature = "peers")]
pub mod hecs;
pub mod spatial;
pub mod transform;

/// Entities in `simple_insert` and `simple_iter`.
pub const SIMPLE_ENTITIES: usize = 10_000;
/// Entities per archetype in `frag_iter` (26 archetypes).
pub const FRAG_PER_ARCHETYPE: usize = 20;
/// Entities in `heavy_compute`.
pub const HEAVY_ENTITIES: usize = 1_000;
/// Matrix inversions per entity per frame in `heavy_compute`.
pub const HEAVY_INVERSIONS: usize = 100;
/// Entities in `add_remove`.
pub const ADD_REMOVE_ENTITIES: usize = 10_000;
/// Entities in the chunk-skip scenario.
pub const SKIP_ENTITIES: usize = 100_000;
/// Entities per archetype in `schedule` (four archetypes).
pub const SCHEDULE_PER_ARCHETYPE: usize = 10_000;

/// Initial transform matrix of `simple_*` entities.
pub fn simple_transform() -> Mat4 {
    Mat4::from_scale(Vec3::ONE)
}

/// Initial transform matrix of `heavy_compute` entities (invertible, not the identity).
pub fn heavy_transform() -> Mat4 {
    Mat4::from_axis_angle(Vec3::X, 1.2)
}

/// The per-entity work of `heavy_compute`: invert the matrix
/// [`HEAVY_INVERSIONS`] times, then transform the position by it.
#[inline]
pub fn heavy_work(pos: &mut Vec3, mat: &mut Mat4) {
    for _ in 0..HEAVY_INVERSIONS {
        *mat = mat.inverse();
    }
    *pos = mat.transform_vector3(*pos);
}

/// Initial position of entity `i` in the chunk-skip scenario.
pub fn skip_position(i: usize) -> Vec3 {
    let i = i as f32;
    Vec3::new(i, i * 0.5, -i)
}

/// The consumer's per-row work in the chunk-skip scenario.
#[inline]
pub fn skip_matrix(pos: Vec3) -> Mat4 {
    Mat4::from_translation(pos)
}

/// The ecs_bench_suite cases, in report order, and ours with lifecycle
/// hooks on every component (`*_hooks`, against the peers' plain cases).
pub const SUITE_CASES: [&str; 9] = [
    "simple_insert",
    "simple_iter",
    "frag_iter",
    "heavy_compute",
    "add_remove",
    "add_remove_wide",
    "spawn_despawn",
    "simple_insert_hooks",
    "add_remove_hooks",
];

/// Which entities the writer touches each frame in the chunk-skip scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// No entity changes.
    None,
    /// A contiguous run of spawn-order entities (centred in the world, so it
    /// does not start on a chunk boundary by construction).
    Clustered,
    /// Every k-th entity in spawn order.
    Scattered,
}

/// One case of the chunk-skip scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkipCase {
    /// Case name as reported (`changed_0`, `clustered_5pct`, ...).
    pub name: &'static str,
    /// Percentage of the entities that move each frame.
    pub percent: usize,
    /// How the movers are laid out in spawn order.
    pub layout: Layout,
}

impl SkipCase {
    /// Spawn-order indices of the movers among `n` entities.
    pub fn mover_indices(&self, n: usize) -> Vec<usize> {
        let count = n * self.percent / 100;
        match self.layout {
            Layout::None => Vec::new(),
            Layout::Clustered => {
                let start = (n - count) / 2;
                (start..start + count).collect()
            }
            Layout::Scattered => {
                if self.percent == 0 {
                    return Vec::new();
                }
                let stride = 100 / self.percent;
                (0..n).step_by(stride).take(count).collect()
            }
        }
    }
}

/// The chunk-skip cases, in report order.
pub const SKIP_CASES: [SkipCase; 8] = [
    SkipCase { name: "changed_0", percent: 0, layout: Layout::None },
    SkipCase { name: "clustered_1pct", percent: 1, layout: Layout::Clustered },
    SkipCase { name: "clustered_5pct", percent: 5, layout: Layout::Clustered },
    SkipCase { name: "clustered_10pct", percent: 10, layout: Layout::Clustered },
    SkipCase { name: "clustered_100pct", percent: 100, layout: Layout::Clustered },
    SkipCase { name: "scattered_1pct", percent: 1, layout: Layout::Scattered },
    SkipCase { name: "scattered_5pct", percent: 5, layout: Layout::Scattered },
    SkipCase { name: "scattered_10pct", percent: 10, layout: Layout::Scattered },
];

/// The component sets of the `schedule` scene, in spawn order: `(A, B)`,
/// `(A, B, C)`, `(A, B, C, D)`, `(A, B, C, E)`, [`SCHEDULE_PER_ARCHETYPE`]
/// entities each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleGroup {
    /// `(A, B)`.
    Ab,
    /// `(A, B, C)`.
    Abc,
    /// `(A, B, C, D)`.
    Abcd,
    /// `(A, B, C, E)`.
    Abce,
}

/// The `schedule` groups, in spawn order.
pub const SCHEDULE_GROUPS: [ScheduleGroup; 4] =
    [ScheduleGroup::Ab, ScheduleGroup::Abc, ScheduleGroup::Abcd, ScheduleGroup::Abce];

/// Total number of entities in the `schedule` scene.
pub const SCHEDULE_ENTITIES: usize = SCHEDULE_GROUPS.len() * SCHEDULE_PER_ARCHETYPE;

/// The names of the three systems of the `schedule` scene, in the order they are added.
pub const SCHEDULE_SYSTEMS: [&str; 3] = ["ab", "cd", "ce"];

/// The `A`..`E` values of one `schedule` entity (`None` where the component is absent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AbcdeValues {
    /// `A`.
    pub a: f32,
    /// `B`.
    pub b: f32,
    /// `C`, if present.
    pub c: Option<f32>,
    /// `D`, if present.
    pub d: Option<f32>,
    /// `E`, if present.
    pub e: Option<f32>,
}

impl ScheduleGroup {
    /// The group of the entity spawned `index`-th (`None` past the end).
    pub fn of(index: usize) -> Option<Self> {
        SCHEDULE_GROUPS.get(index / SCHEDULE_PER_ARCHETYPE).copied()
    }

    /// Initial values of the entity spawned `index`-th, which must belong to
    /// this group. Every value is distinct from the entity's other values
    /// and exact in `f32`, so a swap is always visible.
    pub fn initial(self, index: usize) -> AbcdeValues {
        let i = index as f32;
        let (has_c, has_d, has_e) = match self {
            ScheduleGroup::Ab => (false, false, false),
            ScheduleGroup::Abc => (true, false, false),
            ScheduleGroup::Abcd => (true, true, false),
            ScheduleGroup::Abce => (true, false, true),
        };
        AbcdeValues {
            a: i,
            b: -i - 1.0,
            c: has_c.then_some(i + 0.5),
            d: has_d.then_some(-i - 0.5),
            e: has_e.then_some(i + 0.25),
        }
    }
}

/// What the `schedule` systems leave in an entity that started at `initial`
/// after `runs` runs of the schedule: `ab` swaps `A` and `B` of every entity,
/// `cd` swaps `C` and `D` where both exist, `ce` swaps `C` and `E` where both
/// exist (no entity has both `D` and `E`), once per run each.
pub fn schedule_expected(initial: AbcdeValues, runs: u64) -> AbcdeValues {
    if runs.is_multiple_of(2) {
        return initial;
    }
    let mut v = initial;
    std::mem::swap(&mut v.a, &mut v.b);
    if v.d.is_some() {
        std::mem::swap(&mut v.c, &mut v.d);
    }
    if v.e.is_some() {
        std::mem::swap(&mut v.c, &mut v.e);
    }
    v
}

/// Spawn indices of the entities whose values the `schedule` check reads:
/// the first, a middle and the last entity of each group.
pub fn schedule_samples() -> Vec<usize> {
    (0..SCHEDULE_GROUPS.len())
        .flat_map(|g| {
            let base = g * SCHEDULE_PER_ARCHETYPE;
            [base, base + SCHEDULE_PER_ARCHETYPE / 2 + 7, base + SCHEDULE_PER_ARCHETYPE - 1]
        })
        .collect()
}

/// Timing and chunk counters of one system of the last schedule run (only
/// `ours` reports them).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SystemReport {
    /// The system's name as the schedule reports it.
    pub name: String,
    /// Wall-clock time of its last run, in microseconds (`game`: the
    /// median over the timed frames).
    #[serde(with = "crate::row::figure")]
    pub last_run_us: f64,
    /// Chunk counters of its queries in the last run.
    #[serde(flatten)]
    pub chunks: ChunkCounts,
}

/// Chunk counters of one query run (only `ours` has them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkCounts {
    /// Chunks the query matched (`chunks_total` in a JSON line).
    #[serde(rename = "chunks_total")]
    pub total: u64,
    /// Matched chunks skipped without touching their rows (`chunks_skipped`).
    #[serde(rename = "chunks_skipped")]
    pub skipped: u64,
}

/// A suite scene: [`Frame::frame`] is the timed unit.
pub trait Frame {
    /// Runs one frame (one benchmark iteration).
    fn frame(&mut self);

    /// Chunk counters of the last frame's query, where the implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        None
    }
}

/// A chunk-skip scene: an untimed writer, then a timed consumer.
pub trait SkipScene {
    /// Number of entities the writer changes each frame.
    fn movers(&self) -> usize;

    /// Untimed part of a frame: writes `Pos` of the movers and advances the
    /// change tick so that the consumer sees exactly these writes.
    fn write(&mut self);

    /// Timed part of a frame: recomputes `Matrix` for the rows whose `Pos`
    /// changed; returns the number of rows processed.
    fn consume(&mut self) -> usize;

    /// Chunk counters of the last [`SkipScene::consume`], where the implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        None
    }

    /// Runs a few untimed frames and checks that the consumer processes
    /// exactly the movers each time. The first frame (which also sees the
    /// spawns) is not checked.
    fn check(&mut self) -> Result<(), String> {
        self.write();
        self.consume();
        for frame in 0..3 {
            self.write();
            let rows = self.consume();
            if rows != self.movers() {
                return Err(format!("frame {frame}: consumer processed {rows} rows, writer moved {}", self.movers()));
            }
        }
        Ok(())
    }
}

/// The `schedule` scene: three systems in one schedule, run on a world of
/// [`SCHEDULE_ENTITIES`] entities. [`ScheduleScene::run`] is the timed unit.
pub trait ScheduleScene {
    /// Runs the schedule once (one benchmark iteration).
    fn run(&mut self);

    /// How many runs of the schedule have completed.
    fn runs(&self) -> u64;

    /// The first error the implementation reported while building or running
    /// the schedule, if any (bevy panics instead).
    fn failure(&self) -> Option<String> {
        None
    }

    /// The current values of the entity spawned `index`-th, `None` if it
    /// cannot be read.
    fn values(&self, index: usize) -> Option<AbcdeValues>;

    /// Per-system timing and chunk counters of the last run, where the
    /// implementation reports them.
    fn systems(&self) -> Vec<SystemReport> {
        Vec::new()
    }

    /// Chunk counters of the last run summed over the systems, where the
    /// implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        let systems = self.systems();
        if systems.is_empty() {
            return None;
        }
        Some(systems.iter().fold(ChunkCounts::default(), |acc, s| ChunkCounts {
            total: acc.total + s.chunks.total,
            skipped: acc.skipped + s.chunks.skipped,
        }))
    }

    /// Untimed: checks that no error was reported and that the sampled
    /// entities (see [`schedule_samples`]) hold what [`ScheduleScene::runs`]
    /// runs of the three systems must leave, i.e. every pair was swapped once
    /// per run.
    fn check(&self) -> Result<(), String> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let runs = self.runs();
        for index in schedule_samples() {
            let group = ScheduleGroup::of(index).ok_or_else(|| format!("sample {index} is out of range"))?;
            let expected = schedule_expected(group.initial(index), runs);
            let got = self.values(index).ok_or_else(|| format!("entity #{index} ({group:?}) cannot be read"))?;
            if got != expected {
                return Err(format!(
                    "after {runs} runs, entity #{index} ({group:?}) holds {got:?}, expected {expected:?}"
                ));
            }
        }
        Ok(())
    }

    /// Untimed: checks the initial values, runs the schedule twice (odd and
    /// even run counts), checking after each run.
    fn check_runs(&mut self) -> Result<(), String> {
        self.check()?;
        for _ in 0..2 {
            self.run();
            self.check()?;
        }
        Ok(())
    }
}

/// Defines the suite and chunk-skip component newtypes in the calling module;
/// extra attributes (such as `#[derive(Component)]`) are applied to each type.
macro_rules! define_components {
    ($(#[$attr:meta])*) => {
        /// Transform matrix (`simple_*`, `heavy_compute`).
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Transform(pub glam::Mat4);

        /// Position.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Pos(pub glam::Vec3);

        /// Rotation.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Rot(pub glam::Vec3);

        /// Velocity.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Vel(pub glam::Vec3);

        /// The matrix recomputed by the chunk-skip consumer.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Matrix(pub glam::Mat4);

        /// Component present on every `add_remove` and `schedule` entity.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct A(pub f32);

        /// Component inserted and removed by `add_remove`; on every `schedule` entity.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct B(pub f32);

        /// `schedule` component (groups `ABC`, `ABCD`, `ABCE`).
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct C(pub f32);

        /// `schedule` component (group `ABCD`).
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct D(pub f32);

        /// `schedule` component (group `ABCE`).
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct E(pub f32);

        /// The data iterated by `frag_iter`.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Data(pub f32);

        /// The 26 archetype tags of `frag_iter`.
        pub mod frag {
            $crate::scenes::define_components!(@frag [$(#[$attr])*] FA FB FC FD FE FF FG FH FI FJ FK FL FM FN FO FP FQ FR FS FT FU FV FW FX FY FZ);
        }
    };
    (@frag [$($attrs:tt)*]) => {};
    (@frag [$($attrs:tt)*] $name:ident $($rest:ident)*) => {
        /// A `frag_iter` archetype tag.
        $($attrs)*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub f32);

        $crate::scenes::define_components!(@frag [$($attrs)*] $($rest)*);
    };
}
pub(crate) use define_components;

/// Calls `$mac!(Tag)` for each of the 26 `frag_iter` tags of the calling module.
macro_rules! for_each_frag_tag {
    ($mac:ident) => {
        $mac!(FA);
        $mac!(FB);
        $mac!(FC);
        $mac!(FD);
        $mac!(FE);
        $mac!(FF);
        $mac!(FG);
        $mac!(FH);
        $mac!(FI);
        $mac!(FJ);
        $mac!(FK);
        $mac!(FL);
        $mac!(FM);
        $mac!(FN);
        $mac!(FO);
        $mac!(FP);
        $mac!(FQ);
        $mac!(FR);
        $mac!(FS);
        $mac!(FT);
        $mac!(FU);
        $mac!(FV);
        $mac!(FW);
        $mac!(FX);
        $mac!(FY);
        $mac!(FZ);
    };
}
pub(crate) use for_each_frag_tag;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mover_counts() {
        for case in SKIP_CASES {
            let movers = case.mover_indices(SKIP_ENTITIES);
            assert_eq!(movers.len(), SKIP_ENTITIES * case.percent / 100, "{}", case.name);
            assert!(movers.windows(2).all(|w| w[0] < w[1]));
            assert!(movers.iter().all(|&i| i < SKIP_ENTITIES));
        }
        let scattered = SKIP_CASES[6].mover_indices(SKIP_ENTITIES);
        assert_eq!(scattered[1] - scattered[0], 20);
    }

    #[test]
    fn schedule_expectations() {
        let v = ScheduleGroup::Abcd.initial(2 * SCHEDULE_PER_ARCHETYPE + 3);
        let once = schedule_expected(v, 1);
        assert_eq!((once.a, once.b, once.c, once.d, once.e), (v.b, v.a, v.d, v.c, None));
        assert_eq!(schedule_expected(v, 2), v);
        let v = ScheduleGroup::Abce.initial(3 * SCHEDULE_PER_ARCHETYPE);
        let once = schedule_expected(v, 3);
        assert_eq!((once.c, once.e, once.d), (v.e, v.c, None));
        let v = ScheduleGroup::Abc.initial(SCHEDULE_PER_ARCHETYPE);
        assert_eq!(schedule_expected(v, 1).c, v.c);
        let samples = schedule_samples();
        assert_eq!(samples.len(), 12);
        assert!(samples.iter().all(|&i| ScheduleGroup::of(i).is_some()));
        assert_eq!(ScheduleGroup::of(SCHEDULE_ENTITIES), None);
    }
}
