//! The cell lookup (dense table, hash table over the occupied rows, binary
//! search) on the point sets that pick each one: results equal brute force
//! whatever the lookup, the occupancy or the cell size, and the choice is
//! reported in the grid's stats. Also `suggest_cell_size`.

use ecs_spatial::{
    BuildKind, CellCoord, CellKey, CellLookup, GridPoint, LookupKind, NeighborLists, SparseGrid, suggest_cell_size,
};
use glam::{Vec2, Vec3};
use proptest::prelude::*;

mod common;
use common::Rng;

fn uniform(n: usize, side: f32, seed: u64) -> Vec<Vec3> {
    let mut r = Rng(seed);
    (0..n).map(|_| Vec3::new(r.unit(), r.unit(), r.unit()) * side).collect()
}

/// Many small Gaussian clusters in a large box.
fn clustered_sparse(n: usize, clusters: usize, sigma: f32, side: f32, seed: u64) -> Vec<Vec3> {
    let mut r = Rng(seed);
    let centres: Vec<Vec3> = (0..clusters).map(|_| Vec3::new(r.unit(), r.unit(), r.unit()) * side).collect();
    (0..n).map(|i| centres[i % clusters] + Vec3::new(r.gaussian(), r.gaussian(), r.gaussian()) * sigma).collect()
}

/// A uniform cube with a few points moved very far out.
fn with_outliers(n: usize, seed: u64) -> Vec<Vec3> {
    let mut pts = uniform(n, 50.0, seed);
    let far = [
        Vec3::new(90_000.0, 3.0, 3.0),
        Vec3::new(-80_000.0, -70_000.0, 10.0),
        Vec3::new(5.0, 60_000.0, -90_000.0),
        Vec3::splat(75_000.0),
    ];
    for (k, p) in far.into_iter().enumerate() {
        pts[k * 37] = p;
    }
    pts
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v
}

fn brute_radius<P: GridPoint>(ps: &[P], c: P, r: f32) -> Vec<u32> {
    (0..ps.len() as u32).filter(|&i| ps[i as usize].distance_squared(c) <= r * r).collect()
}

fn brute_pairs<P: GridPoint>(ps: &[P], r: f32) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            if ps[i].distance_squared(ps[j]) <= r * r {
                v.push((i as u32, j as u32));
            }
        }
    }
    v
}

/// Every radius query, all radius queries (sequential and parallel, equal
/// list by list), all pairs and the cell lookups of a grid over `ps`
/// against brute force; returns the grid.
fn check<P: GridPoint>(origin: P, cell: f32, lookup: CellLookup, ps: &[P], r: f32) -> SparseGrid<P> {
    let ids: Vec<u32> = (0..ps.len() as u32).collect();
    let mut grid = SparseGrid::<P>::new(origin, cell).unwrap().with_lookup(lookup);
    grid.rebuild(&ids, ps).unwrap();
    let mut par = SparseGrid::<P>::new(origin, cell).unwrap().with_lookup(lookup);
    par.par_rebuild(&ids, ps).unwrap();
    assert_eq!((par.ids(), par.cells()), (grid.ids(), grid.cells()));
    let mut out = Vec::new();
    for &q in ps.iter().step_by((ps.len() / 40).max(1)) {
        grid.query_radius(q, r, &mut out);
        assert_eq!(sorted(out.clone()), brute_radius(ps, q, r), "radius {r} around {q:?}, cell {cell}, {lookup:?}");
    }
    let (mut lists, mut par_lists) = (NeighborLists::new(), NeighborLists::new());
    grid.query_radius_all(r, &mut lists);
    grid.par_query_radius_all(r, &mut par_lists);
    for s in 0..lists.len() {
        let (id, hits) = lists.get(s);
        assert_eq!(par_lists.get(s), (id, hits));
        assert_eq!(sorted(hits.to_vec()), brute_radius(ps, ps[id as usize], r), "all queries, cell {cell}");
    }
    let mut pairs = Vec::new();
    grid.for_each_pair_within(r, |a, b| pairs.push((a.min(b), a.max(b))));
    assert_eq!(sorted(pairs), brute_pairs(ps, r), "pairs within {r}, cell {cell}, {lookup:?}");
    // Every occupied cell is found through the lookup, and its neighbour is
    // either found with its points or empty.
    for c in grid.cells() {
        assert_eq!(grid.cell_slots(c.key), c.start as usize..(c.start + c.count) as usize);
        let next = c.key.offset(1, 0, 0).unwrap();
        let found = grid.cell_slots(next);
        match grid.cells().iter().find(|d| d.key == next) {
            Some(d) => assert_eq!(found, d.start as usize..(d.start + d.count) as usize),
            None => assert!(found.is_empty(), "{found:?}"),
        }
    }
    grid
}

#[test]
fn each_point_set_picks_its_lookup_and_equals_brute_force() {
    // Uniform in a small box: the dense table, built by counting.
    let g = check(Vec3::ZERO, 1.0, CellLookup::Auto, &uniform(3000, 20.0, 1), 1.0);
    assert_eq!(g.lookup_kind(), LookupKind::Dense);
    let s = g.stats();
    assert_eq!((s.lookup, s.build, s.points), (LookupKind::Dense, BuildKind::Counting, 3000));
    assert_eq!(s.dense_entries as u64, s.bounding_box_cells + 1);
    assert_eq!(s.hash_slots, 0);
    assert_eq!(s.cells, g.cells().len());

    // Uniform in a box of about 28 cells per point: too many cells to sort
    // by counting over the box, few enough for the dense table, which is
    // then filled from the radix-sorted cells (most of its entries empty).
    let g = check(Vec3::ZERO, 1.0, CellLookup::Auto, &uniform(3000, 44.0, 4), 1.0);
    let s = g.stats();
    assert_eq!(s.lookup, LookupKind::Dense, "{s:?}");
    assert!(matches!(s.build, BuildKind::Radix { .. }), "{s:?}");
    assert_eq!(s.dense_entries as u64, s.bounding_box_cells + 1);
    assert!(s.bounding_box_cells > 25 * s.cells as u64, "{s:?}");

    // Small clusters in a large box: millions of cells and rows in the
    // box, more rows than a block table may have. With cells of 2 the
    // clusters' occupied coordinates (ranked per axis) have few enough
    // rows for one; with cells of 1 they have too many, and the hash
    // serves.
    let sparse = clustered_sparse(3000, 40, 1.5, 2000.0, 2);
    for (r, ranked) in [(1.0, false), (2.0, true)] {
        let g = check(Vec3::ZERO, r, CellLookup::Auto, &sparse, r);
        let s = g.stats();
        assert_eq!(s.lookup, LookupKind::Hashed);
        assert!(matches!(s.build, BuildKind::Radix { .. }), "{s:?}");
        assert!(s.bounding_box_cells > 1_000_000 && s.dense_entries == 0, "{s:?}");
        if ranked {
            assert!(s.blocks_compacted && s.block_entries > 0 && s.hash_slots == 0, "{s:?}");
        } else {
            assert!(s.hash_slots.is_power_of_two() && s.block_entries == 0 && !s.blocks_compacted, "{s:?}");
        }
    }

    // Uniform in a box of about 2700 cells per point whose 40000 rows fit a
    // block table: the sparse lookup without its hash. Cells outside the
    // box and empty cells inside it are found empty.
    let g = check(Vec3::ZERO, 5.0, CellLookup::Auto, &uniform(3000, 1000.0, 5), 5.0);
    let s = g.stats();
    assert_eq!(s.lookup, LookupKind::Hashed, "{s:?}");
    assert!(s.block_entries > 40_000 && s.hash_slots == 0 && s.dense_entries == 0, "{s:?}");
    for [x, y, z] in [[-1, 0, 0], [0, 0, 500], [7, 7, 7]] {
        let key = CellKey::pack(CellCoord::new(x, y, z)).unwrap();
        let want =
            g.cells().iter().find(|c| c.key == key).map_or(0..0, |c| c.start as usize..(c.start + c.count) as usize);
        assert_eq!(g.cell_slots(key), want, "{key:?}");
        assert_eq!(g.cell_points(key).map(|(ids, _)| ids.len()), (!want.is_empty()).then_some(want.len()));
    }

    // The same in 2D, in pairs 2.5 apart across 4000 x 4000 cells: blocks
    // of 256 cells (a row holds under one point), every point with one
    // neighbour, some in the next cell or block.
    let mut r = Rng(6);
    let pairs: Vec<Vec2> = (0..1500)
        .flat_map(|_| {
            let p = Vec2::new(r.unit(), r.unit()) * 20_000.0;
            [p, p + Vec2::new(1.5, -2.0)]
        })
        .collect();
    let g = check(Vec2::ZERO, 5.0, CellLookup::Auto, &pairs, 5.0);
    let s = g.stats();
    assert_eq!(s.lookup, LookupKind::Hashed, "{s:?}");
    assert!(s.block_entries > 4000 && s.hash_slots == 0, "{s:?}");

    // A few far outliers stretch the box to ~10^15 cells: hashed, radix
    // sorted on the key bits that vary.
    let outliers = with_outliers(3000, 3);
    for r in [1.5, 4.0] {
        let g = check(Vec3::ZERO, r, CellLookup::Auto, &outliers, r);
        let s = g.stats();
        assert_eq!(s.lookup, LookupKind::Hashed);
        match s.build {
            BuildKind::Radix { key_bits, passes } => assert!(key_bits > 32 && passes >= 3, "{s:?}"),
            other => panic!("{other:?}"),
        }
    }
}

/// The cells of `g` are in key order and each keeps its points in input
/// order (ids are input indices), as the stable sorts promise.
fn assert_sorted_cells(g: &SparseGrid<Vec3>, what: &str) {
    assert!(g.cells().windows(2).all(|w| w[0].key < w[1].key), "{what}: cells out of key order");
    for c in g.cells() {
        let ids = &g.ids()[c.start as usize..(c.start + c.count) as usize];
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{what}: input order lost in {:?}", c.key);
    }
}

/// Keys of up to 63 bits (points near the eight corners of the key range):
/// the radix build packs each key with its input index into one 64-bit item
/// while both fit (2 points: 63 + 1 bits) and uses 16-byte items beyond
/// (200 points: 63 + 8 bits). Both sort the cells by key, keep input order
/// within a cell and equal brute force.
#[test]
fn radix_items_with_and_without_room_for_the_input_index() {
    let corners = |n: usize| -> Vec<Vec3> {
        let mut r = Rng(11);
        (0..n)
            .map(|i| {
                // Corners 0 and 7 first (opposite: every axis varies), then the rest.
                let corner = i * 7 % 8;
                let side = |bit: usize| if (corner >> bit) & 1 == 1 { 1_000_000.0 } else { -1_000_000.0 };
                Vec3::new(side(0), side(1), side(2)) + Vec3::new(r.unit(), r.unit(), r.unit()) * 3.0
            })
            .collect()
    };
    for n in [2, 200] {
        let ps = corners(n);
        let g = check(Vec3::ZERO, 1.0, CellLookup::Auto, &ps, 2.0);
        match g.stats().build {
            BuildKind::Radix { key_bits, .. } => assert!(key_bits >= 60, "{n} points: {key_bits} bits"),
            other => panic!("{n} points: {other:?}"),
        }
        assert_sorted_cells(&g, &format!("{n} points"));
        assert_eq!(g.len(), n);
    }
}

/// Builds of at least 16384 points sort with 12-bit radix digits: sparse
/// clusters in a box of 24 key bits (two passes) and far outliers (wide
/// keys). Each is checked whole (cells in key order, each point once, in
/// its own cell, input order within a cell, as `par_rebuild` has it) and by
/// radius queries against brute force.
#[test]
fn large_radix_builds_keep_order_keys_and_points() {
    let sets = [("sparse", clustered_sparse(20_000, 300, 1.5, 200.0, 21)), ("outliers", with_outliers(20_000, 22))];
    for (name, ps) in &sets {
        let ids: Vec<u32> = (0..ps.len() as u32).collect();
        let mut g = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
        g.rebuild(&ids, ps).unwrap();
        match g.stats().build {
            BuildKind::Radix { key_bits, passes } if *name == "sparse" => {
                assert!(key_bits <= 24 && passes == 2, "{name}: {key_bits} bits in {passes} passes")
            }
            BuildKind::Radix { .. } => {}
            other => panic!("{name}: {other:?}"),
        }
        let mut par = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
        par.par_rebuild(&ids, ps).unwrap();
        assert_eq!((par.ids(), par.cells()), (g.ids(), g.cells()), "{name}");
        assert_sorted_cells(&g, name);
        let mut seen = vec![false; ps.len()];
        for c in g.cells() {
            let slots = c.start as usize..(c.start + c.count) as usize;
            for (&id, p) in g.ids()[slots.clone()].iter().zip(g.positions().slice(slots).unwrap()) {
                assert_eq!(p, ps[id as usize], "{name}");
                assert_eq!(g.cell_key_of(p).unwrap(), c.key, "{name}");
                assert!(!std::mem::replace(&mut seen[id as usize], true), "{name}: {id} twice");
            }
        }
        assert!(seen.iter().all(|&s| s), "{name}: a point is missing");
        let mut out = Vec::new();
        for &q in ps.iter().step_by(997) {
            g.query_radius(q, 1.5, &mut out);
            assert_eq!(sorted(out.clone()), brute_radius(ps, q, 1.5), "{name}: radius around {q:?}");
        }
    }
}

#[test]
fn forced_lookups_equal_the_automatic_one() {
    let sets = [uniform(1500, 15.0, 4), clustered_sparse(1500, 20, 1.0, 500.0, 5), with_outliers(1500, 6)];
    for ps in &sets {
        for lookup in [CellLookup::Auto, CellLookup::Hashed, CellLookup::BinarySearch] {
            let g = check(Vec3::new(-3.0, 0.5, 7.0), 1.3, lookup, ps, 2.1);
            let want = match lookup {
                CellLookup::Hashed => Some(LookupKind::Hashed),
                CellLookup::BinarySearch => Some(LookupKind::BinarySearch),
                CellLookup::Auto => None,
            };
            if let Some(want) = want {
                assert_eq!(g.lookup_kind(), want);
            }
        }
    }
}

#[test]
fn tiny_and_huge_cells_equal_brute_force() {
    let ps = clustered_sparse(1200, 12, 2.0, 100.0, 7);
    // At radius 1.5: cells of r/150 and r/15 (walked by `walk_rows`), about
    // r/8 on both sides of the row cursors' reach, r/5, r/3, then large.
    for cell in [0.01, 0.1, 0.18, 0.2, 0.3, 0.5, 4.0, 50.0, 1.0e4] {
        for lookup in [CellLookup::Auto, CellLookup::Hashed] {
            check(Vec3::ZERO, cell, lookup, &ps, 1.5);
        }
    }
    let flat: Vec<Vec2> = ps.iter().map(|p| p.truncate()).collect();
    for cell in [0.05, 1.0, 300.0] {
        check(Vec2::ZERO, cell, CellLookup::Auto, &flat, 1.5);
        check(Vec2::ZERO, cell, CellLookup::Hashed, &flat, 1.5);
    }
}

#[test]
fn hashed_grids_stay_exact_through_edits() {
    // Points move between far clusters; the hash table is rebuilt when a
    // cell appears or empties, kept otherwise.
    let mut ps = clustered_sparse(800, 8, 1.0, 5000.0, 8);
    let ids: Vec<u32> = (0..ps.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
    grid.rebuild(&ids, &ps).unwrap();
    assert_eq!(grid.lookup_kind(), LookupKind::Hashed);
    let mut rng = Rng(9);
    for round in 0..6 {
        let mut removed = Vec::new();
        let mut inserted = Vec::new();
        for _ in 0..40 {
            let slot = (rng.next() % grid.len() as u64) as u32;
            if removed.contains(&slot) {
                continue;
            }
            let id = grid.ids()[slot as usize];
            let to = ps[(rng.next() % ps.len() as u64) as usize] + Vec3::splat(rng.unit() * 0.5);
            removed.push(slot);
            ps[id as usize] = to;
            inserted.push((grid.cell_key_of(to).unwrap(), id, to));
        }
        grid.apply_edits(&mut removed, &mut inserted).unwrap();
        assert_eq!(grid.stats().build, BuildKind::Edit);
        let mut out = Vec::new();
        for &q in ps.iter().step_by(23) {
            grid.query_radius(q, 1.7, &mut out);
            assert_eq!(sorted(out.clone()), brute_radius(&ps, q, 1.7), "round {round}");
        }
        let mut pairs = Vec::new();
        grid.for_each_pair_within(1.7, |a, b| pairs.push((a.min(b), a.max(b))));
        assert_eq!(sorted(pairs), brute_pairs(&ps, 1.7), "round {round}");
        for c in grid.cells() {
            let key: CellKey = c.key;
            assert_eq!(grid.cell_slots(key), c.start as usize..(c.start + c.count) as usize);
        }
    }
}

/// Edits move a sparse grid between its two sparse lookups: a far point
/// grows the box past what a block table may cover (the hash is built), a
/// rebuild without it shrinks the box again (the block table is back), and
/// every query equals brute force on each side.
#[test]
fn edits_switch_between_the_block_table_and_the_hash() {
    let mut ps = uniform(2000, 1000.0, 15);
    let ids: Vec<u32> = (0..ps.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
    grid.rebuild(&ids, &ps).unwrap();
    let exact = |grid: &SparseGrid<Vec3>, ps: &[Vec3], what: &str| {
        let mut out = Vec::new();
        for &q in ps.iter().step_by(7) {
            grid.query_radius(q, 9.0, &mut out);
            assert_eq!(sorted(out.clone()), brute_radius(ps, q, 9.0), "{what}: around {q:?}");
        }
        let mut lists = NeighborLists::new();
        grid.query_radius_all(9.0, &mut lists);
        for s in 0..lists.len() {
            let (id, hits) = lists.get(s);
            assert_eq!(sorted(hits.to_vec()), brute_radius(ps, ps[id as usize], 9.0), "{what}: all queries");
        }
        let mut pairs = Vec::new();
        grid.for_each_pair_within(9.0, |a, b| pairs.push((a.min(b), a.max(b))));
        assert_eq!(sorted(pairs), brute_pairs(ps, 9.0), "{what}: pairs");
        for c in grid.cells() {
            assert_eq!(grid.cell_slots(c.key), c.start as usize..(c.start + c.count) as usize, "{what}");
        }
    };
    let s = grid.stats();
    assert!(s.block_entries > 0 && s.hash_slots == 0, "{s:?}");
    exact(&grid, &ps, "built");

    // Point 0 goes far along y and z: 10^10 rows, no block table.
    let far = Vec3::new(500.0, 400_000.0, -300_000.0);
    let slot = grid.ids().iter().position(|&i| i == 0).unwrap() as u32;
    ps[0] = far;
    grid.apply_edits(&mut [slot], &mut [(grid.cell_key_of(far).unwrap(), 0, far)]).unwrap();
    let s = grid.stats();
    assert_eq!(s.lookup, LookupKind::Hashed);
    assert!(s.block_entries == 0 && s.hash_slots > 0, "{s:?}");
    exact(&grid, &ps, "after the far edit");

    // It comes back: the box an edit leaves stays as large (edits only
    // grow it), so the hash stays; a rebuild makes the box tight again.
    let back = Vec3::new(3.0, 4.0, 5.0);
    let slot = grid.ids().iter().position(|&i| i == 0).unwrap() as u32;
    ps[0] = back;
    grid.apply_edits(&mut [slot], &mut [(grid.cell_key_of(back).unwrap(), 0, back)]).unwrap();
    assert!(grid.stats().hash_slots > 0);
    exact(&grid, &ps, "after the edit back");
    grid.rebuild(&ids, &ps).unwrap();
    let s = grid.stats();
    assert!(s.block_entries > 0 && s.hash_slots == 0, "{s:?}");
    exact(&grid, &ps, "rebuilt");
}

#[test]
fn suggested_cell_sizes() {
    // Invalid input: the radius back.
    assert_eq!(suggest_cell_size::<Vec3>(&[], 3.0), 3.0);
    assert!(suggest_cell_size(&[Vec3::ZERO], f32::NAN).is_nan());
    assert_eq!(suggest_cell_size(&[Vec3::ZERO], -1.0), -1.0);
    assert_eq!(suggest_cell_size(&[Vec3::splat(f32::NAN)], 2.0), 2.0);
    // Always one of the tried multiples of the radius.
    let sets = [uniform(5000, 100.0, 10), clustered_sparse(5000, 50, 2.0, 800.0, 11), with_outliers(5000, 12)];
    for ps in &sets {
        for r in [0.5, 2.0, 8.0] {
            let c = suggest_cell_size(ps, r);
            assert!([0.5, 1.0, 2.0].iter().any(|f| (c - f * r).abs() <= 1e-6 * r), "{c} for {r}");
        }
    }
    // Dense data gets cells below the radius, sparse data at or above it.
    let dense = uniform(20_000, 10.0, 13);
    assert!(suggest_cell_size(&dense, 3.0) < 3.0);
    let sparse = uniform(2000, 1000.0, 14);
    assert!(suggest_cell_size(&sparse, 3.0) >= 3.0);
    // 2D works the same.
    let flat: Vec<Vec2> = dense.iter().map(|p| p.truncate()).collect();
    assert!(suggest_cell_size(&flat, 1.0) > 0.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Mixtures of a uniform cube, tight clusters in a big box and far
    /// outliers, at any cell size and lookup: equal to brute force.
    #[test]
    fn mixtures_equal_brute_force(
        seed in any::<u64>(),
        n_uniform in 0usize..300,
        n_clustered in 0usize..300,
        outliers in 0usize..4,
        cell in prop::sample::select(vec![0.05f32, 0.3, 1.0, 2.5, 20.0, 5000.0]),
        r in prop::sample::select(vec![0.0f32, 0.4, 1.0, 3.0]),
        lookup in prop::sample::select(vec![CellLookup::Auto, CellLookup::Hashed, CellLookup::BinarySearch]),
    ) {
        let mut ps = uniform(n_uniform, 12.0, seed);
        ps.extend(clustered_sparse(n_clustered, 6, 0.8, 3000.0, seed ^ 1));
        let mut rng = Rng(seed ^ 2);
        for _ in 0..outliers {
            ps.push(Vec3::new(rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5) * 1.0e5);
        }
        if !ps.is_empty() {
            check(Vec3::new(0.25, -1.0, 3.0), cell, lookup, &ps, r);
        }
    }
}
