//! The grid's queries against brute force on random and adversarial point
//! sets: results must be equal exactly.

use ecs_spatial::{CellLookup, EncodeError, GridError, GridPoint, LookupKind, NeighborLists, SparseGrid};
use glam::{Vec2, Vec3};
use proptest::prelude::*;

fn brute_radius<P: GridPoint>(ids: &[u64], ps: &[P], c: P, r: f32) -> Vec<u64> {
    if r.is_nan() || r < 0.0 {
        return Vec::new();
    }
    let mut v: Vec<u64> =
        ids.iter().zip(ps).filter(|&(_, &p)| p.distance_squared(c) <= r * r).map(|(&i, _)| i).collect();
    v.sort_unstable();
    v
}

fn brute_box<P: GridPoint>(ids: &[u64], ps: &[P], min: P, max: P) -> Vec<u64> {
    let mut v: Vec<u64> = ids.iter().zip(ps).filter(|&(_, &p)| p.in_box(min, max)).map(|(&i, _)| i).collect();
    v.sort_unstable();
    v
}

fn brute_knn<P: GridPoint>(ids: &[u64], ps: &[P], c: P, k: usize) -> Vec<(u64, f32)> {
    let mut v: Vec<(u64, f32)> = ids.iter().zip(ps).map(|(&i, &p)| (i, p.distance_squared(c))).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    v.truncate(k);
    v
}

fn brute_pairs<P: GridPoint>(ids: &[u64], ps: &[P], r: f32) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            if ps[i].distance_squared(ps[j]) <= r * r {
                v.push((ids[i].min(ids[j]), ids[i].max(ids[j])));
            }
        }
    }
    v.sort_unstable();
    v
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// Every query of a grid built from `ps` against brute force.
fn check_all<P: GridPoint>(origin: P, cell: f32, ps: &[P], queries: &[P], radii: &[f32], lookup: CellLookup) {
    let ids: Vec<u64> = (0..ps.len() as u64).map(|i| i * 3 + 1).collect();
    let mut grid = SparseGrid::<P, u64>::new(origin, cell).unwrap().with_lookup(lookup);
    grid.rebuild(&ids, ps).unwrap();
    assert_eq!(grid.len(), ps.len());
    let mut par = SparseGrid::<P, u64>::new(origin, cell).unwrap().with_lookup(lookup);
    par.par_rebuild(&ids, ps).unwrap();
    assert_eq!(par.ids(), grid.ids());
    assert_eq!(par.cells(), grid.cells());

    // Cell table: sorted, covers every point once, keys match the points.
    let mut covered = 0;
    for w in grid.cells().windows(2) {
        assert!(w[0].key < w[1].key);
    }
    for c in grid.cells() {
        assert_eq!(c.start as usize, covered);
        assert!(c.count > 0);
        covered += c.count as usize;
        for p in grid.positions().slice(c.start as usize..(c.start + c.count) as usize).unwrap() {
            let v = p.to_vec3();
            let o = origin.to_vec3();
            let key = ecs_spatial::CellKey::of_point(v, o, cell).unwrap();
            assert_eq!(key, c.key);
        }
    }
    assert_eq!(covered, ps.len());

    let mut out = Vec::new();
    let mut knn = Vec::new();
    for &q in queries {
        for &r in radii {
            grid.query_radius(q, r, &mut out);
            assert_eq!(sorted(out.clone()), brute_radius(&ids, ps, q, r), "radius {r} around {q:?}");
            // Box around the query.
            let v = q.to_vec3();
            let lo = v - Vec3::splat(r);
            let hi = v + Vec3::splat(r * 0.5);
            let (lo, hi) = from_vec3::<P>(lo, hi);
            grid.query_box(lo, hi, &mut out);
            assert_eq!(sorted(out.clone()), brute_box(&ids, ps, lo, hi), "box {lo:?}..{hi:?}");
        }
        for k in [0, 1, 3, 8, ps.len() + 2] {
            grid.query_k_nearest(q, k, &mut knn);
            let got: Vec<(u64, f32)> = knn.iter().map(|n| (n.id, n.distance_squared)).collect();
            assert_eq!(got, brute_knn(&ids, ps, q, k), "k {k} around {q:?}");
        }
    }
    let mut lists = NeighborLists::new();
    let mut par_lists = NeighborLists::new();
    for &r in radii {
        let mut pairs = Vec::new();
        grid.for_each_pair_within(r, |a, b| pairs.push((a.min(b), a.max(b))));
        pairs.sort_unstable();
        assert_eq!(pairs, brute_pairs(&ids, ps, r), "pairs within {r}");
        let par_pairs = std::sync::Mutex::new(Vec::new());
        grid.par_for_each_pair_within(r, |a, b| par_pairs.lock().unwrap().push((a.min(b), a.max(b))));
        let mut par_pairs = par_pairs.into_inner().unwrap();
        par_pairs.sort_unstable();
        assert_eq!(par_pairs, pairs);

        grid.query_radius_all(r, &mut lists);
        grid.par_query_radius_all(r, &mut par_lists);
        assert_eq!(lists.len(), ps.len());
        assert_eq!(par_lists.len(), ps.len());
        for s in 0..lists.len() {
            let (q, hits) = lists.get(s);
            assert_eq!(par_lists.get(s), (q, hits));
            let qi = grid.input_indices()[s] as usize;
            assert_eq!(q, ids[qi]);
            assert_eq!(sorted(hits.to_vec()), brute_radius(&ids, ps, ps[qi], r));
        }
    }
    // Single queries again: the batch queries may have built the block
    // table's pages, which single queries then use too.
    for &q in queries {
        for &r in radii {
            grid.query_radius(q, r, &mut out);
            assert_eq!(sorted(out.clone()), brute_radius(&ids, ps, q, r), "radius {r} around {q:?}, after batches");
        }
    }
}

fn from_vec3<P: GridPoint>(lo: Vec3, hi: Vec3) -> (P, P) {
    // Only Vec2 and Vec3 implement GridPoint here.
    let any_lo: &dyn std::any::Any = &lo;
    if P::DIMENSIONS == 3 {
        let lo = *any_lo.downcast_ref::<Vec3>().unwrap();
        let cast = |v: Vec3| *(&v as &dyn std::any::Any).downcast_ref::<P>().unwrap();
        (cast(lo), cast(hi))
    } else {
        let cast = |v: Vec3| *(&v.truncate() as &dyn std::any::Any).downcast_ref::<P>().unwrap();
        (cast(lo), cast(hi))
    }
}

fn both_lookups<P: GridPoint>(origin: P, cell: f32, ps: &[P], queries: &[P], radii: &[f32]) {
    check_all(origin, cell, ps, queries, radii, CellLookup::Auto);
    check_all(origin, cell, ps, queries, radii, CellLookup::BinarySearch);
}

fn v3(t: (f32, f32, f32)) -> Vec3 {
    Vec3::new(t.0, t.1, t.2)
}

/// A coordinate in `-limit..limit` on a 1/1024 lattice, drawn as an
/// integer: proptest's `f32` range sampler can fail a debug assertion of
/// its own on some seeds.
fn coord(limit: i32) -> impl Strategy<Value = f32> {
    (-limit * 1024..limit * 1024).prop_map(|v| v as f32 / 1024.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_3d(
        points in prop::collection::vec((coord(60), coord(60), coord(60)), 0..160),
        queries in prop::collection::vec((coord(70), coord(70), coord(70)), 1..6),
        cell in prop::sample::select(vec![1.0f32, 2.5, 5.0, 7.3]),
    ) {
        let ps: Vec<Vec3> = points.into_iter().map(v3).collect();
        let mut qs: Vec<Vec3> = queries.into_iter().map(v3).collect();
        qs.extend(ps.iter().take(3));
        both_lookups(Vec3::new(-3.0, 0.0, 11.0), cell, &ps, &qs, &[0.0, 1.0, cell, 2.7 * cell, 25.0]);
    }

    #[test]
    fn random_2d(
        points in prop::collection::vec((coord(60), coord(60)), 0..160),
        queries in prop::collection::vec((coord(70), coord(70)), 1..6),
        cell in prop::sample::select(vec![1.0f32, 3.0, 8.0]),
    ) {
        let ps: Vec<Vec2> = points.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        let mut qs: Vec<Vec2> = queries.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        qs.extend(ps.iter().take(3));
        both_lookups(Vec2::new(0.5, -4.0), cell, &ps, &qs, &[0.0, 2.0, cell, 3.3 * cell]);
    }

    #[test]
    fn integer_lattice_points_sit_on_cell_borders(
        points in prop::collection::vec((-8i32..8, -8i32..8, -8i32..8), 0..120),
        queries in prop::collection::vec((-9i32..9, -9i32..9, -9i32..9), 1..6),
    ) {
        // Cell size 2 with points on the integer lattice: half of every axis
        // lies exactly on a border, and radii 1, 2, 3 hit borders exactly.
        let ps: Vec<Vec3> = points.into_iter().map(|(x, y, z)| Vec3::new(x as f32, y as f32, z as f32)).collect();
        let qs: Vec<Vec3> = queries.into_iter().map(|(x, y, z)| Vec3::new(x as f32, y as f32, z as f32)).collect();
        both_lookups(Vec3::ZERO, 2.0, &ps, &qs, &[0.0, 1.0, 2.0, 3.0, 2f32.sqrt()]);
    }

    #[test]
    fn borders_of_inexact_cell_sizes(
        points in prop::collection::vec((-12i32..12, -12i32..12, -12i32..12, -1i32..=1), 0..120),
        queries in prop::collection::vec((-13i32..13, -13i32..13, -13i32..13), 1..5),
        cell in prop::sample::select(vec![0.1f32, 0.3, 0.7, 7.3, 1.0 / 3.0]),
        origin in prop::sample::select(vec![0.0f32, -0.35, 12.5]),
    ) {
        // Points on (or one ulp beside) cell borders `origin + k * cell` of
        // cell sizes whose inverse is not exact, and radii that are whole
        // multiples of the cell size: the queries' range arithmetic (a
        // multiply by the inverse) must still never miss a point.
        let nudge = |v: f32, d: i32| match d {
            -1 => f32::from_bits(if v > 0.0 { v.to_bits() - 1 } else { v.to_bits() + 1 }),
            1 => f32::from_bits(if v >= 0.0 { v.to_bits() + 1 } else { v.to_bits() - 1 }),
            _ => v,
        };
        let at = |k: i32| origin + k as f32 * cell;
        let ps: Vec<Vec3> = points
            .into_iter()
            .map(|(x, y, z, d)| Vec3::new(nudge(at(x), d), at(y), nudge(at(z), -d)))
            .collect();
        let qs: Vec<Vec3> = queries.into_iter().map(|(x, y, z)| Vec3::new(at(x), at(y), at(z))).collect();
        both_lookups(Vec3::splat(origin), cell, &ps, &qs, &[0.0, cell, 2.0 * cell, 3.0 * cell, cell * 1.5]);
    }

    #[test]
    fn borders_far_along_one_axis(
        points in prop::collection::vec((-12i32..12, -12i32..12, -12i32..12, -1i32..=1), 0..120),
        queries in prop::collection::vec((-13i32..13, -13i32..13, -13i32..13), 1..5),
        cell in prop::sample::select(vec![0.1f32, 0.3, 7.3, 1.0 / 3.0]),
        far in prop::sample::select(vec![1i32 << 16, 3 << 18, -(5 << 17)]),
        axis in 0usize..3,
    ) {
        // As above, with one axis's cells hundreds of thousands of cells
        // from the origin and the others near it: each axis's range margin
        // follows its own coordinates, so the near axes get small margins
        // and the far axis a large one; neither may miss a point.
        let nudge = |v: f32, d: i32| match d {
            -1 => f32::from_bits(if v > 0.0 { v.to_bits() - 1 } else { v.to_bits() + 1 }),
            1 => f32::from_bits(if v >= 0.0 { v.to_bits() + 1 } else { v.to_bits() - 1 }),
            _ => v,
        };
        let at = |k: i32, a: usize| (if a == axis { k + far } else { k }) as f32 * cell;
        let ps: Vec<Vec3> = points
            .into_iter()
            .map(|(x, y, z, d)| Vec3::new(nudge(at(x, 0), d), nudge(at(y, 1), -d), nudge(at(z, 2), d)))
            .collect();
        let mut qs: Vec<Vec3> =
            queries.into_iter().map(|(x, y, z)| Vec3::new(at(x, 0), at(y, 1), at(z, 2))).collect();
        // Some stored points as centres too: their rounding (one ulp off a
        // border) lands the range's ends on either side of a border.
        qs.extend(ps.iter().take(6));
        both_lookups(Vec3::ZERO, cell, &ps, &qs, &[0.0, cell, 2.0 * cell, cell * 1.5]);
    }
}

#[test]
fn everything_in_one_cell() {
    let ps: Vec<Vec3> = (0..50).map(|i| Vec3::new(0.1 + i as f32 * 0.01, 0.2, 0.3)).collect();
    both_lookups(Vec3::ZERO, 10.0, &ps, &[Vec3::ZERO, Vec3::splat(0.3), Vec3::splat(-20.0)], &[0.05, 0.5, 100.0]);
    let grid = {
        let mut g = SparseGrid::<Vec3>::new(Vec3::ZERO, 10.0).unwrap();
        g.rebuild(&(0..50).collect::<Vec<u32>>(), &ps).unwrap();
        g
    };
    assert_eq!(grid.cells().len(), 1);
}

#[test]
fn duplicate_positions() {
    let ps = vec![Vec3::splat(1.0); 10];
    both_lookups(Vec3::ZERO, 1.0, &ps, &[Vec3::splat(1.0), Vec3::ZERO], &[0.0, 1.0]);
}

#[test]
fn empty_grid_finds_nothing() {
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    grid.rebuild(&[], &[]).unwrap();
    assert!(grid.is_empty());
    let mut out = vec![1];
    grid.query_radius(Vec3::ZERO, 100.0, &mut out);
    assert!(out.is_empty());
    grid.query_box(Vec3::splat(-1.0), Vec3::ONE, &mut out);
    assert!(out.is_empty());
    let mut knn = Vec::new();
    grid.query_k_nearest(Vec3::ZERO, 3, &mut knn);
    assert!(knn.is_empty());
    let mut lists = NeighborLists::new();
    grid.par_query_radius_all(1.0, &mut lists);
    assert!(lists.is_empty());
    let mut pairs = Vec::new();
    grid.pairs_within(1.0, &mut pairs);
    assert!(pairs.is_empty());
}

#[test]
fn degenerate_queries() {
    let ps: Vec<Vec3> = (0..20).map(|i| Vec3::new(i as f32, -(i as f32), 0.5)).collect();
    let ids: Vec<u32> = (0..20).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 2.0).unwrap();
    grid.rebuild(&ids, &ps).unwrap();
    let mut out = Vec::new();
    grid.query_radius(Vec3::ZERO, -1.0, &mut out);
    assert!(out.is_empty());
    grid.query_radius(Vec3::ZERO, f32::NAN, &mut out);
    assert!(out.is_empty());
    grid.query_radius(Vec3::NAN, 5.0, &mut out);
    assert!(out.is_empty());
    grid.query_radius(Vec3::ZERO, f32::INFINITY, &mut out);
    assert_eq!(out.len(), 20);
    grid.query_radius(Vec3::splat(1.0e30), 1.0, &mut out);
    assert!(out.is_empty());
    grid.query_box(Vec3::ONE, Vec3::ZERO, &mut out);
    assert!(out.is_empty());
    grid.query_box(Vec3::splat(f32::NEG_INFINITY), Vec3::splat(f32::INFINITY), &mut out);
    assert!(out.is_empty(), "non-finite boxes find nothing");
    // A k-nearest query far outside the occupied cells still finds the closest.
    let mut knn = Vec::new();
    grid.query_k_nearest(Vec3::new(1.0e6, 0.0, 0.0), 1, &mut knn);
    assert_eq!(knn[0].id, 19);
}

#[test]
fn build_errors() {
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    assert_eq!(grid.rebuild(&[1, 2], &[Vec3::ZERO]), Err(GridError::LengthMismatch { ids: 2, positions: 1 }));
    let ps: Vec<Vec3> = (0..10_000).map(|i| Vec3::new(i as f32, 0.0, 0.0)).collect();
    let mut bad = ps.clone();
    bad[5000].y = f32::NAN;
    bad[9000].z = f32::INFINITY;
    let ids: Vec<u32> = (0..10_000).collect();
    for parallel in [false, true] {
        let r = if parallel { grid.par_rebuild(&ids, &bad) } else { grid.rebuild(&ids, &bad) };
        match r {
            Err(GridError::InvalidPoint(e)) => {
                assert_eq!(e.index, 5000);
                assert_eq!(e.error, EncodeError::NotFinite);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(grid.is_empty());
    }
    let far = [Vec3::new(0.0, 3.0e6, 0.0)];
    assert!(matches!(grid.rebuild(&[0], &far), Err(GridError::InvalidPoint(e)) if e.error == EncodeError::OutOfRange));
    assert!(SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 0.0).is_err());
    assert!(SparseGrid::<Vec2, u32>::new(Vec2::NAN, 1.0).is_err());
    // Points spread to the edges of the key range use the wide sort and binary search.
    let edges = [Vec3::splat(-1_048_576.0), Vec3::splat(1_048_575.5), Vec3::ZERO];
    grid.rebuild(&[0, 1, 2], &edges).unwrap();
    assert!(!grid.uses_dense_lookup());
    let mut knn = Vec::new();
    grid.query_k_nearest(Vec3::splat(1.0e6), 1, &mut knn);
    assert_eq!(knn[0].id, 1);
    let mut out = Vec::new();
    grid.query_radius(Vec3::splat(-1_048_576.0), 1.0, &mut out);
    assert_eq!(out, vec![0]);
}

/// A bad or extreme coordinate at any index of a short input (every lane of
/// the build's steps of four and eight points, and the remainders after
/// them) is found: the error names that index, and an extreme point lands
/// in its cell.
#[test]
fn bad_and_extreme_points_at_every_index() {
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    for n in 1..=9usize {
        let ids: Vec<u32> = (0..n as u32).collect();
        let base: Vec<Vec3> = (0..n).map(|i| Vec3::new(i as f32 * 0.5, 1.0, 2.0)).collect();
        for k in 0..n {
            for (axis, bad) in [(0, f32::NAN), (1, f32::INFINITY), (2, f32::NEG_INFINITY), (0, 3.0e6)] {
                let mut ps = base.clone();
                ps[k][axis] = bad;
                match grid.rebuild(&ids, &ps) {
                    Err(GridError::InvalidPoint(e)) => assert_eq!(e.index, k, "n {n}, bad {bad} at {k}"),
                    other => panic!("n {n}, bad {bad} at {k}: {other:?}"),
                }
                assert!(grid.is_empty());
            }
            for far in [Vec3::new(-700.0, 1.0, 2.0), Vec3::new(3.0, 900.0, 2.0), Vec3::new(3.0, 1.0, -800.0)] {
                let mut ps = base.clone();
                ps[k] = far;
                grid.rebuild(&ids, &ps).unwrap();
                let mut hits = Vec::new();
                grid.query_radius(far, 0.25, &mut hits);
                assert_eq!(hits, vec![k as u32], "n {n}, far {far} at {k}");
                assert_eq!(grid.len(), n);
            }
        }
    }
}

fn lcg_points(n: usize, seed: u64, half: f32) -> Vec<Vec3> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 * half - half
    };
    (0..n).map(|_| Vec3::new(next(), next(), next())).collect()
}

/// Clumps of points far apart along x: a bounding box too large for the
/// dense table, and blocks of many occupied cells, so the first batch query
/// builds the block table's pages, which every later query reads.
#[test]
fn clumps_far_apart_use_pages() {
    let mut ps = Vec::new();
    for (i, x) in [0.0f32, 3000.0, 9000.0, 9040.0].into_iter().enumerate() {
        ps.extend(lcg_points(300, 40 + i as u64, 2.0).into_iter().map(|p| p + Vec3::new(x, 1.0, -2.0)));
    }
    let ids: Vec<u32> = (0..ps.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    grid.rebuild(&ids, &ps).unwrap();
    assert_eq!(grid.lookup_kind(), LookupKind::Hashed);
    assert_eq!(grid.stats().page_entries, 0);
    let mut lists = NeighborLists::new();
    grid.query_radius_all(1.0, &mut lists);
    assert!(grid.stats().page_entries > 0, "{:?}", grid.stats());
    // A rebuild drops them until the next batch query.
    grid.rebuild(&ids, &ps).unwrap();
    assert_eq!(grid.stats().page_entries, 0);
    let qs: Vec<Vec3> = ps.iter().step_by(97).copied().chain([Vec3::new(1500.0, 0.0, 0.0)]).collect();
    check_all(Vec3::ZERO, 1.0, &ps, &qs, &[0.0, 0.5, 1.0, 2.5, 45.0], CellLookup::Auto);
    check_all(Vec3::new(0.3, -0.2, 0.1), 0.7, &ps, &qs, &[0.7, 1.9], CellLookup::Hashed);
}

/// Clumps of points far apart along z, along y and along both, and a
/// clump with far outliers along z: too many rows of cells for the block
/// table, so the dense table keeps only each axis's occupied coordinates.
/// Every query equals brute force, with radii inside a clump and radii
/// that span the empty stretches.
#[test]
fn clumps_far_apart_along_y_and_z_compact_the_dense_table() {
    let mut sets = Vec::new();
    for offset in [Vec3::new(0.0, 0.0, 40_000.0), Vec3::new(0.0, 40_000.0, 0.0), Vec3::new(9.0, 30_000.0, -30_000.0)] {
        let mut ps = Vec::new();
        for (i, k) in [0.0f32, 1.0, 1.002].into_iter().enumerate() {
            ps.extend(lcg_points(400, 50 + i as u64, 3.0).into_iter().map(|p| p + offset * k));
        }
        sets.push(ps);
    }
    let mut outliers = lcg_points(1000, 60, 4.0);
    outliers.extend((0..4).map(|i| Vec3::new(1.0, -2.0, 3000.0 + 9000.0 * i as f32)));
    sets.push(outliers);
    for ps in &sets {
        let ids: Vec<u32> = (0..ps.len() as u32).collect();
        let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
        grid.rebuild(&ids, ps).unwrap();
        let stats = grid.stats();
        assert!(stats.lookup == LookupKind::Dense && stats.dense_compacted, "{stats:?}");
        assert!(stats.dense_entries < 100_000, "{stats:?}");
        let qs: Vec<Vec3> = ps.iter().step_by(53).copied().chain([ps[0] + Vec3::new(0.0, 700.0, 900.0)]).collect();
        check_all(Vec3::ZERO, 1.0, ps, &qs, &[0.0, 0.5, 1.0, 2.5, 90.0], CellLookup::Auto);
        check_all(Vec3::new(0.3, -0.2, 0.1), 0.7, ps, &qs, &[0.7, 1.9], CellLookup::Auto);
    }
}

/// Eight clumps on the diagonal, 600 apart on every axis: the ranked
/// coordinates' dense table would be mostly empty (8^3 blocks of
/// coordinates, 8 of them occupied) and too large, but their rows fit the
/// block table, which then indexes ranked rows and columns. Every query
/// equals brute force, before and after the batch queries' pages.
#[test]
fn clumps_apart_on_every_axis_rank_the_block_table() {
    let mut ps = Vec::new();
    for i in 0..8u64 {
        ps.extend(lcg_points(500, 70 + i, 6.0).into_iter().map(|p| p + Vec3::splat(600.0 * i as f32)));
    }
    let ids: Vec<u32> = (0..ps.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 0.5).unwrap();
    grid.rebuild(&ids, &ps).unwrap();
    let stats = grid.stats();
    assert!(stats.lookup == LookupKind::Hashed && stats.blocks_compacted && stats.hash_slots == 0, "{stats:?}");
    let qs: Vec<Vec3> = ps.iter().step_by(41).copied().chain([Vec3::splat(300.0), Vec3::splat(-5.0)]).collect();
    check_all(Vec3::ZERO, 0.5, &ps, &qs, &[0.0, 0.5, 1.2, 3.0, 900.0], CellLookup::Auto);
}

#[test]
fn steady_state_rebuild_allocates_nothing() {
    let ids: Vec<u32> = (0..20_000).collect();
    for lookup in [CellLookup::Auto, CellLookup::BinarySearch] {
        let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 5.0).unwrap().with_lookup(lookup);
        grid.rebuild(&ids, &lcg_points(20_000, 1, 100.0)).unwrap();
        let mut lists = NeighborLists::new();
        grid.par_query_radius_all(5.0, &mut lists);
        let bytes = grid.reserved_bytes();
        for frame in 2..6 {
            // Points move, but stay in the same bounding box of cells.
            let mut ps = lcg_points(20_000, frame, 99.0);
            ps[0] = Vec3::splat(-100.0);
            ps[1] = Vec3::splat(99.99);
            if frame % 2 == 0 {
                grid.rebuild(&ids, &ps).unwrap();
            } else {
                grid.par_rebuild(&ids, &ps).unwrap();
            }
            assert_eq!(grid.reserved_bytes(), bytes, "frame {frame} reallocated");
        }
    }
}

#[test]
fn larger_set_matches_brute_force() {
    let ps = lcg_points(3000, 7, 40.0);
    let qs = lcg_points(20, 8, 45.0);
    both_lookups(Vec3::ZERO, 5.0, &ps, &qs, &[5.0, 2.0, 11.0]);
}

/// All radius queries give, for each sorted point, exactly the ids within
/// the radius in grid order (sorted slot order), at every hit count: sparse
/// points with a few neighbours, and a dense ball whose rows hold far more
/// than 16 points, whose lists hold hundreds of hits and whose candidates
/// fill several groups of the kernel's hit buffer. All pairs of the same
/// grid equal brute force too.
#[test]
fn radius_lists_are_exact_in_grid_order_at_every_hit_count() {
    let mut ps = lcg_points(2000, 11, 30.0);
    ps.extend(lcg_points(700, 12, 1.5).into_iter().map(|p| p + Vec3::new(4.0, -3.0, 2.0)));
    let ids: Vec<u64> = (0..ps.len() as u64).map(|i| i * 7 + 5).collect();
    for lookup in [CellLookup::Auto, CellLookup::BinarySearch] {
        let mut grid = SparseGrid::<Vec3, u64>::new(Vec3::ZERO, 2.5).unwrap().with_lookup(lookup);
        grid.rebuild(&ids, &ps).unwrap();
        let (sorted_ps, sorted_ids) = (grid.positions().to_vec(), grid.ids().to_vec());
        let mut lists = NeighborLists::new();
        let (mut most, mut fewest) = (0, usize::MAX);
        for r in [0.4, 1.0, 2.5, 4.0] {
            grid.query_radius_all(r, &mut lists);
            assert_eq!(lists.len(), ps.len());
            for (s, &p) in sorted_ps.iter().enumerate() {
                let want: Vec<u64> = (0..sorted_ps.len())
                    .filter(|&t| sorted_ps[t].distance_squared(p) <= r * r)
                    .map(|t| sorted_ids[t])
                    .collect();
                let (id, hits) = lists.get(s);
                assert_eq!(id, sorted_ids[s]);
                assert_eq!(hits, &want[..], "list of slot {s}, radius {r}, {lookup:?}");
                most = most.max(hits.len());
                fewest = fewest.min(hits.len());
            }
            let mut pairs = Vec::new();
            grid.for_each_pair_within(r, |a, b| pairs.push((a.min(b), a.max(b))));
            assert_eq!(sorted_pairs(pairs), brute_pairs(&ids, &ps, r), "pairs within {r}, {lookup:?}");
        }
        // Both sides of the 16-hit block and of a 256-candidate group.
        assert!(fewest == 1 && most > 300, "hit counts {fewest}..={most}");
        let longest_cell = grid.cells().iter().map(|c| c.count).max().unwrap();
        assert!(longest_cell > 32, "densest cell {longest_cell}");
    }
}

fn sorted_pairs(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    v
}

/// Radius queries (single and all), pairs and cell ranges of `grid`
/// against brute force over `ps` (id `i` at `ps[i]`).
fn check_edited(grid: &SparseGrid<Vec3, u64>, ps: &[Vec3], r: f32, what: &str) {
    let ids: Vec<u64> = (0..ps.len() as u64).collect();
    let mut out = Vec::new();
    for &q in ps.iter().step_by(7) {
        grid.query_radius(q, r, &mut out);
        assert_eq!(sorted(out.clone()), brute_radius(&ids, ps, q, r), "{what}: radius {r} around {q:?}");
    }
    let mut lists = NeighborLists::new();
    grid.query_radius_all(r, &mut lists);
    assert_eq!(lists.len(), ps.len(), "{what}");
    for s in 0..lists.len() {
        let (id, hits) = lists.get(s);
        assert_eq!(sorted(hits.to_vec()), brute_radius(&ids, ps, ps[id as usize], r), "{what}: all queries");
    }
    let mut pairs = Vec::new();
    grid.for_each_pair_within(r, |a, b| pairs.push((a.min(b), a.max(b))));
    assert_eq!(sorted_pairs(pairs), brute_pairs(&ids, ps, r), "{what}: pairs");
    for c in grid.cells() {
        assert_eq!(grid.cell_slots(c.key), c.start as usize..(c.start + c.count) as usize, "{what}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Clumps of points up to 20 000 cells apart on any axes: depending
    /// on where they lie the grid takes the dense table, its compacted
    /// form, the block table or the hash. Every query equals brute force
    /// after the build and after edits that move points between clumps,
    /// beside them and into the empty stretches between them.
    #[test]
    fn clumps_far_apart_on_random_axes(
        clumps in prop::collection::vec(
            ((-10_000i32..10_000, -10_000i32..10_000, -10_000i32..10_000), 1usize..3),
            1..6,
        ),
        points in prop::collection::vec((coord(4), coord(4), coord(4), 0usize..6), 10..160),
        moves in prop::collection::vec((0usize..160, 0usize..6, coord(5), coord(5), coord(5), 0u8..4), 0..40),
    ) {
        // Each clump keeps its offset on the axes its mask picks (so some
        // lie apart along one axis only).
        let offsets: Vec<Vec3> = clumps
            .iter()
            .enumerate()
            .map(|(i, &((x, y, z), _))| {
                let keep = [i % 2 == 0 || i == 1, i % 3 != 1, i % 4 != 2];
                Vec3::new(
                    if keep[0] { x as f32 } else { 0.0 },
                    if keep[1] { y as f32 } else { 0.0 },
                    if keep[2] { z as f32 } else { 0.0 },
                )
            })
            .collect();
        let centre = |c: usize| offsets[c % offsets.len()] * clumps[c % clumps.len()].1 as f32;
        let mut ps: Vec<Vec3> = points.iter().map(|&(x, y, z, c)| centre(c) + Vec3::new(x, y, z)).collect();
        let qs: Vec<Vec3> = ps.iter().step_by(11).copied().collect();
        check_all(Vec3::ZERO, 1.0, &ps, &qs, &[0.0, 1.0, 2.5, 7.0], CellLookup::Auto);

        let ids: Vec<u64> = (0..ps.len() as u64).collect();
        let mut grid = SparseGrid::<Vec3, u64>::new(Vec3::ZERO, 1.0).unwrap();
        grid.rebuild(&ids, &ps).unwrap();
        let (lo, hi) = ps.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
        // Three edits: into the empty stretches between clumps (inside
        // the box: coordinates no cell had), then between and beside the
        // clumps, then past the box (it grows).
        for phase in [[2, 2], [0, 1], [3, 3]] {
            let mut removed = Vec::new();
            let mut inserted = Vec::new();
            for &(i, c, x, y, z, kind) in moves.iter().filter(|m| phase.contains(&m.5)) {
                let id = i % ps.len();
                let Some(slot) = grid.ids().iter().position(|&v| v == id as u64) else { continue };
                if removed.contains(&(slot as u32)) {
                    continue;
                }
                let jitter = Vec3::new(x, y, z);
                let to = match kind {
                    // To another clump.
                    0 => centre(c) + jitter,
                    // Beside where it is.
                    1 => ps[id] + jitter,
                    // Halfway between two clumps, kept inside the box.
                    2 => ((centre(c) + centre(c + 1)) * 0.5 + jitter * 0.1).clamp(lo, hi),
                    // Past the box.
                    _ => ps[id] + Vec3::splat(12_000.0) + jitter,
                };
                removed.push(slot as u32);
                inserted.push((grid.cell_key_of(to).unwrap(), id as u64, to));
                ps[id] = to;
            }
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            let what = format!("after the edit of kinds {phase:?}");
            let what = what.as_str();
            check_edited(&grid, &ps, 2.5, what);
            check_edited(&grid, &ps, 7.0, what);
        }
    }
}
