//! Incremental grid edits equal a rebuild over the same points.

use ecs_spatial::{CellKey, CellLookup, GridError, GridStats, LookupKind, SparseGrid};
use glam::{Vec2, Vec3};
use proptest::prelude::*;

fn coord() -> impl Strategy<Value = f32> {
    // Quarter steps across negative and positive cells of edge 2.
    (-40i32..40).prop_map(|v| v as f32 * 0.25)
}

fn point() -> impl Strategy<Value = Vec3> {
    (coord(), coord(), coord()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn sorted_cells(grid: &SparseGrid<Vec3, u32>) -> Vec<(CellKey, Vec<u32>)> {
    grid.cells()
        .iter()
        .map(|c| {
            let mut ids = grid.ids()[c.start as usize..(c.start + c.count) as usize].to_vec();
            ids.sort();
            (c.key, ids)
        })
        .collect()
}

proptest! {
    #[test]
    fn edits_equal_a_rebuild(
        start in prop::collection::vec(point(), 0..200),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..60),
        added in prop::collection::vec(point(), 0..60),
        center in point(),
    ) {
        let ids: Vec<u32> = (0..start.len() as u32).collect();
        let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::new(0.5, 0.0, -0.25), 2.0).unwrap();
        grid.rebuild(&ids, &start).unwrap();

        // Remove a set of distinct slots, insert new ids.
        let mut slots: Vec<u32> = if start.is_empty() { Vec::new() } else {
            removals.iter().map(|i| i.index(start.len()) as u32).collect()
        };
        slots.sort_unstable();
        slots.dedup();
        let gone: Vec<u32> = slots.iter().map(|&s| grid.ids()[s as usize]).collect();
        let mut inserted: Vec<(CellKey, u32, Vec3)> = added.iter().enumerate()
            .map(|(i, &p)| (grid.cell_key_of(p).unwrap(), 1000 + i as u32, p)).collect();
        grid.apply_edits(&mut slots, &mut inserted).unwrap();

        let mut kept: Vec<(u32, Vec3)> = ids.iter().copied().zip(start.iter().copied()).filter(|(id, _)| !gone.contains(id)).collect();
        kept.extend(added.iter().enumerate().map(|(i, &p)| (1000 + i as u32, p)));
        let (kid, kpos): (Vec<u32>, Vec<Vec3>) = kept.iter().copied().unzip();
        let mut fresh = SparseGrid::<Vec3, u32>::new(Vec3::new(0.5, 0.0, -0.25), 2.0).unwrap();
        fresh.rebuild(&kid, &kpos).unwrap();

        prop_assert_eq!(sorted_cells(&grid), sorted_cells(&fresh));
        same_answers(&grid, &fresh, center, [0.0, 1.0, 2.0, 5.5])?;
    }
}

/// `grid` and `fresh` find the same ids around `center` at each radius and
/// the same pairs within 2.5 (each list sorted, pairs in either order).
fn same_answers(
    grid: &SparseGrid<Vec3, u32>,
    fresh: &SparseGrid<Vec3, u32>,
    center: Vec3,
    radii: [f32; 4],
) -> Result<(), TestCaseError> {
    for radius in radii {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        grid.query_radius(center, radius, &mut a);
        fresh.query_radius(center, radius, &mut b);
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    grid.pairs_within(2.5, &mut a);
    fresh.pairs_within(2.5, &mut b);
    let norm = |v: &mut Vec<(u32, u32)>| {
        for p in v.iter_mut() {
            *p = (p.0.min(p.1), p.0.max(p.1));
        }
        v.sort();
    };
    norm(&mut a);
    norm(&mut b);
    prop_assert_eq!(a, b);
    Ok(())
}

type Round = (Vec<(prop::sample::Index, i32, i32, i32)>, Vec<prop::sample::Index>, Vec<Vec3>);

fn rounds(points: impl Strategy<Value = Vec3>) -> impl Strategy<Value = Vec<Round>> {
    prop::collection::vec(
        (
            prop::collection::vec((any::<prop::sample::Index>(), -4i32..=4, -4i32..=4, -4i32..=4), 0..40),
            prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            prop::collection::vec(points, 0..8),
        ),
        1..5,
    )
}

/// Points whose rows of cells are too many for a block table, even over
/// ranked coordinates: x in a few cells, y and z across thousands. A grid
/// of 300 or more such points finds its rows through the hash.
fn far_point() -> impl Strategy<Value = Vec3> {
    (coord(), -16_000i32..16_000, -16_000i32..16_000)
        .prop_map(|(x, y, z)| Vec3::new(x, y as f32 * 0.25, z as f32 * 0.25))
}

/// Points in four clumps on the diagonal, 10 000 apart on every axis: too
/// far apart for a dense table, even over ranked coordinates, so the grid
/// takes the block table over the ranks.
fn clumped_point() -> impl Strategy<Value = Vec3> {
    (0..4i32, point()).prop_map(|(c, p)| p + Vec3::splat(c as f32 * 10_000.0))
}

/// The grid finds its rows through the hash alone.
fn on_the_hash(stats: GridStats) -> bool {
    stats.lookup == LookupKind::Hashed && stats.block_entries == 0 && stats.hash_slots > 0
}

/// The grid finds its rows through a block table over ranked coordinates.
fn on_ranked_blocks(stats: GridStats) -> bool {
    stats.lookup == LookupKind::Hashed && stats.block_entries > 0 && stats.blocks_compacted
}

/// Rounds of edits on one grid (moves of up to a cell per axis, points
/// leaving and joining) equal a rebuild after every round: the cells, the
/// positions, the cell lookup, radius queries and all pairs. `stays` holds
/// for the grid after its build and after every round.
fn check_rounds(
    start: Vec<Vec3>,
    rounds: Vec<Round>,
    lookup: CellLookup,
    center: Vec3,
    stays: fn(GridStats) -> bool,
) -> Result<(), TestCaseError> {
    let origin = Vec3::new(0.5, 0.0, -0.25);
    let mut model: Vec<(u32, Vec3)> = start.iter().enumerate().map(|(i, &p)| (i as u32, p)).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(origin, 2.0).unwrap().with_lookup(lookup);
    let (ids, ps): (Vec<u32>, Vec<Vec3>) = model.iter().copied().unzip();
    grid.rebuild(&ids, &ps).unwrap();
    prop_assert!(stays(grid.stats()), "{:?}", grid.stats());
    let mut next_id = 10_000u32;
    for (moves, leaving, joining) in rounds {
        let mut removed: Vec<u32> = Vec::new();
        let mut inserted: Vec<(CellKey, u32, Vec3)> = Vec::new();
        let slot_of = |grid: &SparseGrid<Vec3, u32>, id: u32| grid.ids().iter().position(|&v| v == id).unwrap() as u32;
        // Moves of up to one cell per axis (quarter steps of up to 1.0).
        for (i, dx, dy, dz) in moves {
            if model.is_empty() {
                break;
            }
            let k = i.index(model.len());
            let (id, p) = model[k];
            let slot = slot_of(&grid, id);
            if removed.contains(&slot) {
                continue;
            }
            let to = p + Vec3::new(dx as f32, dy as f32, dz as f32) * 0.25;
            removed.push(slot);
            inserted.push((grid.cell_key_of(to).unwrap(), id, to));
            model[k].1 = to;
        }
        for i in leaving {
            if model.is_empty() {
                break;
            }
            let k = i.index(model.len());
            let id = model[k].0;
            if inserted.iter().any(|e| e.1 == id) {
                continue;
            }
            let slot = slot_of(&grid, id);
            if !removed.contains(&slot) {
                removed.push(slot);
                model.swap_remove(k);
            }
        }
        for p in joining {
            inserted.push((grid.cell_key_of(p).unwrap(), next_id, p));
            model.push((next_id, p));
            next_id += 1;
        }
        grid.apply_edits(&mut removed, &mut inserted).unwrap();
        prop_assert!(stays(grid.stats()), "{:?}", grid.stats());

        let (ids, ps): (Vec<u32>, Vec<Vec3>) = model.iter().copied().unzip();
        let mut fresh = SparseGrid::<Vec3, u32>::new(origin, 2.0).unwrap().with_lookup(lookup);
        fresh.rebuild(&ids, &ps).unwrap();
        prop_assert_eq!(grid.len(), model.len());
        prop_assert_eq!(grid.positions().len(), model.len());
        prop_assert_eq!(sorted_cells(&grid), sorted_cells(&fresh));
        for (slot, (&id, p)) in grid.ids().iter().zip(grid.positions()).enumerate() {
            let want = model.iter().find(|m| m.0 == id).map(|m| m.1);
            prop_assert_eq!(Some(p), want, "slot {}", slot);
        }
        for cell in grid.cells() {
            let range = cell.start as usize..(cell.start + cell.count) as usize;
            prop_assert_eq!(grid.cell_slots(cell.key), range);
        }
        same_answers(&grid, &fresh, center, [0.0, 1.0, 2.5, 5.5])?;
    }
    Ok(())
}

proptest! {
    /// Edits work in place, moving only what shifts: rounds of edits on the
    /// same grid, each mostly points moving less than a cell (a removal and
    /// an insertion close in key order, which cancel out past both) plus
    /// points leaving and joining, equal a rebuild after every round, for
    /// every lookup (the dense and block tables shift only where the
    /// changes do not cancel out).
    #[test]
    fn rounds_of_near_moves_equal_a_rebuild(
        start in prop::collection::vec(point(), 1..300),
        rounds in rounds(point()),
        lookup in prop::sample::select(vec![CellLookup::Auto, CellLookup::Hashed, CellLookup::BinarySearch]),
        center in point(),
    ) {
        check_rounds(start, rounds, lookup, center, |_| true)?;
    }

    /// The same on grids that find their rows through the hash, which an
    /// edit updates in place for the rows it touched.
    #[test]
    fn rounds_of_near_moves_on_the_hash_equal_a_rebuild(
        start in prop::collection::vec(far_point(), 300..400),
        rounds in rounds(far_point()),
        center in far_point(),
    ) {
        check_rounds(start, rounds, CellLookup::Auto, center, on_the_hash)?;
    }

    /// The same on grids of clumps far apart on every axis, whose block
    /// table over ranked coordinates an edit that adds or empties cells
    /// at coordinates that keep their ranks shifts in place.
    #[test]
    fn rounds_of_near_moves_on_ranked_blocks_equal_a_rebuild(
        start in prop::collection::vec(clumped_point(), 300..400),
        rounds in rounds(clumped_point()),
        center in clumped_point(),
    ) {
        check_rounds(start, rounds, CellLookup::Auto, center, on_ranked_blocks)?;
    }
}

#[test]
fn a_point_leaving_the_box_gets_room_to_grow_into() {
    // 1000 points, one per cell of a 10^3 box; one of them flies off along
    // x, one cell per edit, for 40 edits.
    for lookup in [CellLookup::Auto, CellLookup::Hashed] {
        let points: Vec<Vec3> =
            (0..1000).map(|i| Vec3::new((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32) + 0.5).collect();
        let ids: Vec<u32> = (0..1000).collect();
        let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap().with_lookup(lookup);
        grid.rebuild(&ids, &points).unwrap();
        let kind = grid.stats().lookup;
        assert_eq!(kind, if lookup == CellLookup::Auto { LookupKind::Dense } else { LookupKind::Hashed });
        assert!(lookup == CellLookup::Auto || grid.stats().block_entries > 0, "{:?}", grid.stats());
        let mut last = grid.stats().bounding_box_cells;
        assert_eq!(last, 1000);
        let mut widened = 0;
        let mut p = points[0];
        for step in 1..=40u64 {
            p.x = 9.5 + step as f32;
            let slot = grid.ids().iter().position(|&id| id == 0).unwrap() as u32;
            grid.apply_edits(&mut [slot], &mut [(grid.cell_key_of(p).unwrap(), 0, p)]).unwrap();
            let stats = grid.stats();
            assert_eq!(stats.lookup, kind, "{lookup:?}, step {step}");
            assert!(stats.bounding_box_cells >= (10 + step) * 100, "{lookup:?}, step {step}: {stats:?}");
            if stats.bounding_box_cells != last {
                widened += 1;
                last = stats.bounding_box_cells;
            }
            let mut near = Vec::new();
            grid.query_radius(p, 0.5, &mut near);
            assert_eq!(near, vec![0], "{lookup:?}, step {step}");
            grid.query_radius(Vec3::splat(5.0), 0.9, &mut near);
            assert_eq!(near.len(), 8, "{lookup:?}, step {step}");
        }
        // Without room the box (and the lookup) would change on each of the 40.
        assert!(widened <= 10, "{lookup:?}: widened {widened} times");
        // A rebuild makes the box tight again: 50 x 10 x 10 cells.
        let mut moved = points.clone();
        moved[0] = p;
        grid.rebuild(&ids, &moved).unwrap();
        assert_eq!(grid.stats().bounding_box_cells, 5000);
    }
}

#[test]
fn bad_edits_are_errors_and_leave_the_grid_alone() {
    let mut grid = SparseGrid::<Vec2, u32>::new(Vec2::ZERO, 1.0).unwrap();
    grid.rebuild(&[1, 2], &[Vec2::new(0.5, 0.5), Vec2::new(3.5, 0.5)]).unwrap();
    let key = grid.cell_key_of(Vec2::new(0.5, 0.5)).unwrap();
    assert_eq!(grid.apply_edits(&mut [2], &mut []), Err(GridError::SlotOutOfRange { slot: 2, len: 2 }));
    assert_eq!(grid.apply_edits(&mut [0, 0], &mut []), Err(GridError::SlotOutOfRange { slot: 0, len: 2 }));
    assert_eq!(
        grid.apply_edits(&mut [], &mut [(key, 3, Vec2::new(5.5, 0.5))]),
        Err(GridError::CellMismatch { slot: 0 })
    );
    assert!(matches!(
        grid.apply_edits(&mut [], &mut [(key, 3, Vec2::new(f32::NAN, 0.5))]),
        Err(GridError::InvalidPoint(_))
    ));
    assert_eq!(grid.set_position_in_cell(0, Vec2::new(2.5, 0.5)), Err(GridError::CellMismatch { slot: 0 }));
    assert_eq!(grid.set_position_in_cell(9, Vec2::new(0.5, 0.5)), Err(GridError::SlotOutOfRange { slot: 9, len: 2 }));
    assert_eq!(grid.ids(), &[1, 2]);
    grid.set_position_in_cell(0, Vec2::new(0.75, 0.25)).unwrap();
    assert_eq!(grid.positions().get(0), Some(Vec2::new(0.75, 0.25)));
    assert_eq!(grid.find_slot(key, 1), Some(0));
    assert_eq!(grid.find_slot(key, 2), None);
    // Removing everything empties the grid.
    grid.apply_edits(&mut [0, 1], &mut []).unwrap();
    assert!(grid.is_empty() && grid.cells().is_empty());
}

#[test]
fn pairs_in_crowded_cells_equal_brute_force() {
    // Hundreds of points per cell: hit buffers fill and flush mid-row.
    let mut s = 99u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 40) % 64) as f32 * 0.125
    };
    let positions: Vec<Vec3> = (0..1500).map(|_| Vec3::new(next(), next() * 0.1, next() * 0.1)).collect();
    let ids: Vec<u32> = (0..positions.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 4.0).unwrap();
    grid.rebuild(&ids, &positions).unwrap();
    for radius in [0.5f32, 2.0, 4.0] {
        let mut got = Vec::new();
        grid.pairs_within(radius, &mut got);
        let mut got: Vec<(u32, u32)> = got.into_iter().map(|(a, b)| (a.min(b), a.max(b))).collect();
        got.sort();
        let mut want = Vec::new();
        for i in 0..positions.len() {
            for j in i + 1..positions.len() {
                if positions[i].distance_squared(positions[j]) <= radius * radius {
                    want.push((i as u32, j as u32));
                }
            }
        }
        assert!(want.len() > 1000, "{}", want.len());
        assert_eq!(got, want, "radius {radius}");
    }
}

/// Distinct cells of a `side` box of cells of edge 1 (its two corners
/// first, so they fix the box), `count` of them, from a fixed sequence.
fn distinct_cells(side: [u32; 3], count: usize) -> Vec<[u32; 3]> {
    let mut seen = std::collections::HashSet::new();
    let mut cells = vec![[0, 0, 0], [side[0] - 1, side[1] - 1, side[2] - 1]];
    seen.extend(cells.iter().copied());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    while cells.len() < count {
        let c = [0, 1, 2].map(|a| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(side[a])) as u32
        });
        if seen.insert(c) {
            cells.push(c);
        }
    }
    cells
}

/// Edits that move one point to `into` and back again, 20 times, on a
/// grid whose cell count then crosses a threshold of its lookup at every
/// edit: the grid keeps one table (`same` holds for its stats after the
/// first edit and after each later one), where a rebuild of the grid with
/// the point moved chooses another than the first build (`other` holds
/// for the two builds' stats); the answers equal a rebuild's at the end.
fn check_threshold_keeps_the_table(
    points: Vec<Vec3>,
    flipper: usize,
    into: Vec3,
    same: impl Fn(GridStats, GridStats) -> bool,
    other: impl Fn(GridStats, GridStats) -> bool,
) {
    let ids: Vec<u32> = (0..points.len() as u32).collect();
    let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    grid.rebuild(&ids, &points).unwrap();
    let first = grid.stats();
    let mut moved = points.clone();
    moved[flipper] = into;
    let mut fresh = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
    fresh.rebuild(&ids, &moved).unwrap();
    assert!(other(first, fresh.stats()), "{first:?} {:?}", fresh.stats());
    let home = points[flipper];
    let mut kept = None;
    for step in 0..20 {
        let to = if step % 2 == 0 { into } else { home };
        let slot = grid.ids().iter().position(|&id| id == flipper as u32).unwrap() as u32;
        grid.apply_edits(&mut [slot], &mut [(grid.cell_key_of(to).unwrap(), flipper as u32, to)]).unwrap();
        let kept = *kept.get_or_insert(grid.stats());
        assert!(same(kept, grid.stats()), "edit {step}: {kept:?} {:?}", grid.stats());
    }
    same_answers(
        &grid,
        &{
            let mut g = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 1.0).unwrap();
            g.rebuild(&ids, &points).unwrap();
            g
        },
        Vec3::splat(20.5),
        [0.0, 1.0, 2.5, 4.0],
    )
    .unwrap();
}

#[test]
fn a_grid_at_the_dense_tables_threshold_keeps_it_across_edits() {
    // 8192 cells of a 64^3 box, a 32nd of it, three points a cell except
    // the last one's single point: moved into an occupied cell, the grid
    // has one cell too few for the dense table.
    let cells = distinct_cells([64, 64, 64], 8192);
    let mut points = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let at = Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32);
        for j in 0..if i == cells.len() - 1 { 1 } else { 3 } {
            points.push(at + Vec3::new(0.1 + 0.2 * j as f32, 0.5, 0.5));
        }
    }
    let flipper = points.len() - 1;
    check_threshold_keeps_the_table(
        points,
        flipper,
        Vec3::splat(0.7),
        |a, b| a.lookup == LookupKind::Dense && b.lookup == LookupKind::Dense,
        |_, fresh| fresh.lookup == LookupKind::Hashed,
    );
}

#[test]
fn a_grid_at_a_block_geometry_threshold_keeps_it_across_edits() {
    // 49 152 cells of a 4096 x 64 x 64 box, one point each: the block
    // table's blocks are 64 cells wide; with one cell fewer its budget
    // asks for blocks of 128.
    let cells = distinct_cells([4096, 64, 64], 49_152);
    let points: Vec<Vec3> = cells.iter().map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32) + 0.5).collect();
    let flipper = points.len() - 1;
    check_threshold_keeps_the_table(
        points,
        flipper,
        Vec3::splat(0.25),
        |a, b| b.lookup == LookupKind::Hashed && b.block_entries > 0 && b.block_entries == a.block_entries,
        |a, fresh| fresh.block_entries > 0 && fresh.block_entries != a.block_entries,
    );
}

#[test]
fn a_grid_at_the_block_tables_threshold_does_not_switch_back_and_forth() {
    // 6115 cells of a 64 x 300 x 300 box, one point each: its 90 000 rows
    // are too many for a block table, which 6116 cells would allow (the
    // point moved out into a cell of its own). The first edit adds a cell
    // early in key order, which the hash of rows cannot take in place, so
    // the grid gets its block table; the edits that empty that cell again
    // keep it.
    let cells = distinct_cells([64, 300, 300], 6116);
    let points: Vec<Vec3> =
        cells[..6115].iter().map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32) + 0.5).collect();
    let mut points = points;
    // A second point in the first cell: the one that moves out.
    points.push(Vec3::splat(0.75));
    let flipper = points.len() - 1;
    let empty = cells[6115];
    check_threshold_keeps_the_table(
        points,
        flipper,
        Vec3::new(empty[0] as f32, empty[1] as f32, empty[2] as f32) + 0.5,
        |a, b| b.lookup == LookupKind::Hashed && b.block_entries == a.block_entries,
        |first, fresh| first.block_entries == 0 && fresh.block_entries > 0,
    );
}

#[test]
fn a_grid_at_the_threshold_of_a_dense_table_over_ranks_keeps_it_across_edits() {
    // Two clumps of 21^3 cells 5000 apart on every axis: the ranks keep
    // 42 coordinates per axis, 74 088 cells, the dense table's budget for
    // 2316 occupied cells (three points each, one point in the last).
    let per_clump = distinct_cells([21, 21, 21], 1158);
    let mut cells: Vec<[u32; 3]> = per_clump.to_vec();
    cells.extend(per_clump.iter().map(|c| c.map(|v| v + 5000)));
    // Every coordinate of each clump occupied, so each keeps its rank.
    for d in 0..21 {
        for base in [0, 5000] {
            let c = [d + base; 3];
            if !cells.contains(&c) {
                cells.push(c);
            }
        }
    }
    cells.truncate(2316);
    assert_eq!(cells.len(), 2316);
    let mut points = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let at = Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32);
        for j in 0..if i == cells.len() - 1 { 1 } else { 3 } {
            points.push(at + Vec3::new(0.1 + 0.2 * j as f32, 0.5, 0.5));
        }
    }
    let flipper = points.len() - 1;
    check_threshold_keeps_the_table(
        points,
        flipper,
        Vec3::splat(0.7),
        |a, b| a.lookup == LookupKind::Dense && a.dense_compacted && b.lookup == LookupKind::Dense && b.dense_compacted,
        |_, fresh| fresh.lookup != LookupKind::Dense,
    );
}
