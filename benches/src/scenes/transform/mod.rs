//! The `transform` scenario: hierarchy propagation, ours (`ecs-transform`)
//! against `bevy_transform` 0.20 (feature `peers`).
//!
//! Both implementations build the same forests from [`Forest::new`] (nodes
//! in spawn order, parents first) and move the same roots the same way each
//! frame ([`mover_local`]). The timed unit is one propagation run; moving the
//! roots is untimed setup. [`TransformScene::check`] compares sampled
//! globals with a reference computed from the forest description, so both
//! did the same work.

use glam::{Affine3A, Quat, Vec3};

pub mod ours;

#[cfg(feature = "peers")]
pub mod bevy;

use super::ChunkCounts;

/// The shape of a forest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// 1000 roots with 99 children each (100k entities, depth 1).
    Wide,
    /// 1000 chains of depth 100 (100k entities).
    Deep,
    /// 100k roots, no hierarchy.
    Flat,
    /// 4000 rigs of 68 nodes (272k entities, depth 11).
    Humanoids,
}

/// Which roots move each frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Motion {
    /// None.
    Static,
    /// Every 20th root (5 %).
    FivePercent,
    /// Every root.
    All,
}

/// One case of the `transform` scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransformCase {
    /// Case name as reported (`wide_static`, `deep_5pct`, ...).
    pub name: &'static str,
    /// The forest.
    pub shape: Shape,
    /// The movers.
    pub motion: Motion,
}

macro_rules! cases {
    ($($name:literal $shape:ident $motion:ident),* $(,)?) => {
        /// The `transform` cases, in report order.
        pub const TRANSFORM_CASES: [TransformCase; 12] = [
            $(TransformCase { name: $name, shape: Shape::$shape, motion: Motion::$motion },)*
        ];
    };
}

cases!(
    "wide_static" Wide Static, "wide_5pct" Wide FivePercent, "wide_all" Wide All,
    "deep_static" Deep Static, "deep_5pct" Deep FivePercent, "deep_all" Deep All,
    "flat_static" Flat Static, "flat_5pct" Flat FivePercent, "flat_all" Flat All,
    "humanoids_static" Humanoids Static, "humanoids_5pct" Humanoids FivePercent, "humanoids_all" Humanoids All,
);

/// Nodes of one humanoid rig.
pub const RIG_NODES: usize = 68;

/// The parent of each node of a humanoid rig (`None` for the pelvis):
/// a spine of five, three head extras, two arms of clavicle, upper arm,
/// forearm, hand and five three-joint fingers, two legs of four, and
/// thirteen attachments spread over the skeleton. Depth 11.
pub fn rig_parents() -> [Option<usize>; RIG_NODES] {
    let mut parents = [None; RIG_NODES];
    // Spine 1..=5 (spine 1-3, neck, head).
    for (i, p) in parents.iter_mut().enumerate().take(6).skip(1) {
        *p = Some(i - 1);
    }
    // Head extras 6..=8.
    for p in &mut parents[6..9] {
        *p = Some(5);
    }
    let mut next = 9;
    for _arm in 0..2 {
        parents[next] = Some(3); // clavicle on spine 3
        for k in 1..4 {
            parents[next + k] = Some(next + k - 1); // upper arm, forearm, hand
        }
        let hand = next + 3;
        next += 4;
        for _finger in 0..5 {
            parents[next] = Some(hand);
            parents[next + 1] = Some(next);
            parents[next + 2] = Some(next + 1);
            next += 3;
        }
    }
    for _leg in 0..2 {
        parents[next] = Some(0);
        for k in 1..4 {
            parents[next + k] = Some(next + k - 1);
        }
        next += 4;
    }
    for (k, p) in parents.iter_mut().enumerate().skip(next) {
        *p = Some((k * 7) % next);
    }
    parents
}

/// A small, deterministic local transform for node `i` (not the identity,
/// so every level of a deep chain contributes).
pub fn node_local(i: usize) -> (Vec3, Quat, Vec3) {
    let f = (i % 97) as f32;
    (Vec3::new(0.5 + f * 0.01, 0.25, -0.125), Quat::from_rotation_y(0.01 + f * 0.0001), Vec3::ONE)
}

/// The local transform of mover root `i` in frame `frame` (frame 0 is its
/// spawn value).
pub fn mover_local(i: usize, frame: u64) -> (Vec3, Quat, Vec3) {
    let (t, r, s) = node_local(i);
    (t + Vec3::new(frame as f32 * 0.001, 0.0, 0.0), r, s)
}

/// The affine matrix of a (translation, rotation, scale) triple.
pub fn affine((t, r, s): (Vec3, Quat, Vec3)) -> Affine3A {
    Affine3A::from_scale_rotation_translation(s, r, t)
}

/// A forest description: nodes in spawn order (parents before children).
#[derive(Clone, Debug)]
pub struct Forest {
    /// The parent of each node (`None` for roots).
    pub parents: Vec<Option<usize>>,
    /// The roots that move, by node index.
    pub movers: Vec<usize>,
}

impl Forest {
    /// The forest of `case`.
    pub fn new(case: &TransformCase) -> Self {
        let mut parents = Vec::new();
        match case.shape {
            Shape::Wide => {
                for _ in 0..1000 {
                    let root = parents.len();
                    parents.push(None);
                    parents.extend(std::iter::repeat_n(Some(root), 99));
                }
            }
            Shape::Deep => {
                for _ in 0..1000 {
                    parents.push(None);
                    for _ in 1..100 {
                        parents.push(Some(parents.len() - 1));
                    }
                }
            }
            Shape::Flat => parents.resize(100_000, None),
            Shape::Humanoids => {
                let rig = rig_parents();
                for _ in 0..4000 {
                    let base = parents.len();
                    parents.extend(rig.iter().map(|p| p.map(|p| base + p)));
                }
            }
        }
        let roots = parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i);
        let movers = match case.motion {
            Motion::Static => Vec::new(),
            Motion::FivePercent => roots.step_by(20).collect(),
            Motion::All => roots.collect(),
        };
        Forest { parents, movers }
    }

    /// Node count.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.parents.is_empty()
    }

    /// The nodes whose globals the check compares: the first, last and a
    /// few in between, plus the deepest descendant of the first mover.
    pub fn samples(&self) -> Vec<usize> {
        let n = self.len();
        let mut s = vec![0, n / 3 + 1, n / 2 + 17, n - 1];
        if let Some(&m) = self.movers.first() {
            let last_below = (m + 1..n).take_while(|&i| self.parents[i].is_some()).last();
            s.extend(last_below);
            s.push(m);
        }
        s
    }

    /// The reference global of node `i` after `frames` mover frames.
    pub fn reference(&self, i: usize, frames: u64) -> Affine3A {
        let mut chain = vec![i];
        while let Some(p) = self.parents[*chain.last().unwrap_or(&i)] {
            chain.push(p);
        }
        chain.iter().rev().fold(Affine3A::IDENTITY, |acc, &k| {
            let local = if self.movers.binary_search(&k).is_ok() { mover_local(k, frames) } else { node_local(k) };
            acc * affine(local)
        })
    }
}

/// A `transform` scene: untimed [`TransformScene::move_roots`], timed
/// [`TransformScene::propagate`].
pub trait TransformScene {
    /// Untimed: writes the movers' local transforms for the next frame.
    fn move_roots(&mut self);

    /// Timed: one propagation run.
    fn propagate(&mut self);

    /// Untimed: spawns a leaf with transforms under node `parent`, a
    /// structural change (probes only: the checks do not know the leaf).
    fn spawn_leaf(&mut self, parent: usize);

    /// Untimed: despawns node `i`, a structural change (probes only: the
    /// checks no longer hold for `i`).
    fn despawn_node(&mut self, i: usize);

    /// Frames moved so far.
    fn frames(&self) -> u64;

    /// The forest description.
    fn forest(&self) -> &Forest;

    /// The global transform of node `i`, if it can be read.
    fn global(&self, i: usize) -> Option<Affine3A>;

    /// Chunk counters of the last propagation, where the implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        None
    }

    /// Untimed: compares the sampled globals with the reference.
    fn check(&self) -> Result<(), String> {
        let frames = self.frames();
        for i in self.forest().samples() {
            let want = self.forest().reference(i, frames);
            let got = self.global(i).ok_or_else(|| format!("node {i} has no global transform"))?;
            let scale = want.to_cols_array().iter().fold(1.0f32, |m, x| m.max(x.abs()));
            if !got.abs_diff_eq(want, 1e-3 * scale) {
                return Err(format!("after {frames} frames node {i} holds {got:?}, expected {want:?}"));
            }
        }
        Ok(())
    }

    /// Untimed: a first propagation, then two moving frames, each checked.
    fn check_frames(&mut self) -> Result<(), String> {
        self.propagate();
        self.check()?;
        for _ in 0..2 {
            self.move_roots();
            self.propagate();
            self.check()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forests_have_the_documented_sizes() {
        let sizes: Vec<(usize, usize)> = [Shape::Wide, Shape::Deep, Shape::Flat, Shape::Humanoids]
            .into_iter()
            .map(|shape| {
                let f = Forest::new(&TransformCase { name: "t", shape, motion: Motion::All });
                (f.len(), f.movers.len())
            })
            .collect();
        assert_eq!(sizes, [(100_000, 1000), (100_000, 1000), (100_000, 100_000), (272_000, 4000)]);
        let five = Forest::new(&TRANSFORM_CASES[1]);
        assert_eq!(five.movers.len(), 50);
        let rig = rig_parents();
        assert_eq!(rig.iter().filter(|p| p.is_none()).count(), 1);
        assert!(rig.iter().enumerate().all(|(i, p)| p.is_none_or(|p| p < i)));
        let depth = |mut i: usize| {
            let mut d = 0;
            while let Some(p) = rig[i] {
                i = p;
                d += 1;
            }
            d
        };
        assert_eq!((0..RIG_NODES).map(depth).max(), Some(11));
    }

    #[test]
    fn every_scene_matches_the_reference() {
        for case in &TRANSFORM_CASES {
            let mut scenes: Vec<Box<dyn TransformScene>> = vec![Box::new(ours::Propagation::new(case))];
            #[cfg(feature = "peers")]
            scenes.push(Box::new(bevy::Propagation::new(case)));
            for scene in &mut scenes {
                scene.check_frames().unwrap_or_else(|e| panic!("{}: {e}", case.name));
            }
        }
    }

    /// Forests of other shapes (`from_forest`): a binary tree, families of
    /// nine and random trees of mixed depth, all roots or a few moving.
    #[test]
    fn other_forests_match_the_reference() {
        let mut rng = crate::scenes::spatial::SplitMix64::new(0x2545_F491_4F6C_DD1D);
        let mut below = |n: usize| rng.below(n as u32) as usize;
        let binary: Vec<Option<usize>> = (0..1023).map(|k| (k > 0).then(|| (k - 1) / 2)).collect();
        let families: Vec<Option<usize>> = (0..1000).map(|k| (k % 10 != 0).then_some(k - k % 10)).collect();
        let mut random = Vec::new();
        for t in 0..40 {
            let base = random.len();
            random.push(None);
            for k in 1..1 + t % 37 {
                random.push(Some(base + below(k)));
            }
        }
        for (name, parents) in [("binary", binary), ("families", families), ("random", random)] {
            let roots: Vec<usize> = parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i).collect();
            for movers in [roots.clone(), roots.iter().copied().step_by(7).collect()] {
                let forest = Forest { parents: parents.clone(), movers };
                let mut scenes: Vec<Box<dyn TransformScene>> =
                    vec![Box::new(ours::Propagation::from_forest(forest.clone()))];
                #[cfg(feature = "peers")]
                scenes.push(Box::new(bevy::Propagation::from_forest(forest)));
                for scene in &mut scenes {
                    scene.check_frames().unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
        }
    }
}
