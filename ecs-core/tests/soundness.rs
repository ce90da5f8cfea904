//! Regression tests for the soundness classes of issue 11: a state used on
//! a foreign world, destructors that panic inside structural changes, panics
//! inside query loops, tick cells shared between threads, empty bundles, and
//! entity groups fed hostile handles. Each runs under the address-sanitizer
//! step of `.ci/run` as well.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use ecs_core::prelude::*;
use ecs_core::{CommandQueue, EntityGroups, IntoSystem, QueryError, StoreError, System};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(u64);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(u64);
#[derive(Component, Debug, Clone, PartialEq)]
struct Name(String);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Triple([u8; 3]);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Byte(u8);

/// Counts the bytes each thread allocates, so a test can bound what one
/// call allocates.
struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; the counter is a
// const-initialised thread-local `Cell`, which does not allocate.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocated_by(f: impl FnOnce()) -> usize {
    let before = ALLOCATED.with(Cell::get);
    f();
    ALLOCATED.with(Cell::get) - before
}

thread_local! {
    /// Set to make the next `Bomb` dropped on this thread panic (once).
    static FUSE: Cell<bool> = const { Cell::new(false) };
    static BOMB_DROPS: Cell<usize> = const { Cell::new(0) };
}

/// A component with a heap allocation (so a double drop or a read after
/// drop trips the sanitizer) whose destructor panics when the fuse is lit.
#[derive(Component, Debug)]
struct Bomb(Box<u64>);

impl Drop for Bomb {
    fn drop(&mut self) {
        BOMB_DROPS.with(|d| d.set(d.get() + 1));
        assert!(*self.0 < 1 << 40, "dropped value read after free");
        if FUSE.with(|f| f.replace(false)) {
            panic!("Bomb {} went off", self.0);
        }
    }
}

fn lit() {
    FUSE.with(|f| f.set(true));
}

fn drops() -> usize {
    BOMB_DROPS.with(|d| d.get())
}

fn quiet<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    catch_unwind(AssertUnwindSafe(f))
}

// ----- 1. a query state on a foreign world -------------------------------

#[test]
fn query_state_refuses_a_foreign_world_on_every_entry_point() {
    let mut a = World::new();
    a.spawn((Pos(0),));
    let mut state = a.query::<&mut Pos>();
    let mut b = World::new();
    b.register::<Pos>();
    let e = b.spawn(Byte(7));
    let e2 = b.spawn(Byte(9));
    let err = state.get_mut(&mut b, e).err();
    assert!(matches!(err, Some(QueryError::WrongWorld { .. })), "{err:?}");
    assert_eq!(*b.get::<Byte>(e2).unwrap(), Byte(9));

    let read = a.query::<&Pos>();
    assert!(matches!(read.get(&b, e), Err(QueryError::WrongWorld { .. })));
    // An entity that exists in both worlds with the same index too.
    let same = b.spawn((Pos(5),));
    assert!(matches!(read.get(&b, same), Err(QueryError::WrongWorld { .. })));

    // Iteration entry points panic with a clear message.
    let message = |r: std::thread::Result<()>| {
        let p = r.expect_err("a foreign world must be refused");
        p.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let m = message(quiet(|| state.for_each_mut(&mut b, |_| {})));
    assert!(m.contains("was used with world"), "{m}");
    message(quiet(|| state.iter_mut(&mut b).for_each(drop)));
    message(quiet(|| state.par_for_each_mut(&mut b, |_| {})));
    message(quiet(|| state.for_each_chunk_mut(&mut b, |_| {})));
    message(quiet(|| state.par_for_each_chunk_mut(&mut b, |_| {})));
    assert_eq!(b.get::<Pos>(same), Ok(&Pos(5)));
}

#[test]
fn a_system_refuses_a_world_it_was_not_initialized_on() {
    fn bump(mut q: Query<&mut Pos>) {
        q.for_each_mut(|mut p| p.0 += 1);
    }
    let mut a = World::new();
    a.spawn((Pos(0),));
    let mut system = bump.into_system();
    system.run(&mut a).unwrap();
    let mut b = World::new();
    let e = b.spawn(Triple([1u8; 3]));
    let err = system.run(&mut b).unwrap_err();
    assert!(err.contains("cannot run on world"), "{err}");
    assert_eq!(b.get::<Triple>(e), Ok(&Triple([1, 1, 1])));
}

// ----- 2. destructors that panic inside structural changes ----------------

#[test]
fn despawn_with_a_panicking_destructor_removes_the_entity_fully() {
    let mut world = World::new();
    let a = world.spawn((Pos(1), Bomb(Box::new(1)), Name(String::from("a"))));
    let b = world.spawn((Pos(2), Bomb(Box::new(2)), Name(String::from("b"))));
    let before = drops();
    lit();
    assert!(quiet(|| world.despawn(a)).is_err());
    assert_eq!(drops(), before + 1);
    assert!(!world.contains(a));
    assert_eq!(world.despawn(a), Err(StoreError::NoSuchEntity(a)));
    world.check_consistency().unwrap();
    // The entity swapped into the hole is intact.
    assert_eq!(world.get::<Name>(b).map(|n| n.0.as_str()), Ok("b"));
    assert_eq!(*world.get::<Bomb>(b).unwrap().0, 2);
    let mut all = world.query::<(Entity, &Bomb)>();
    assert_eq!(all.iter(&world).map(|(e, _)| e).collect::<Vec<_>>(), vec![b]);
    drop(world);
    assert_eq!(drops(), before + 2, "every bomb dropped exactly once");
}

#[test]
fn insert_replacing_a_panicking_value_completes_the_insert() {
    let mut world = World::new();
    let e = world.spawn((Bomb(Box::new(1)), Pos(1)));
    let before = drops();
    lit();
    // Replaces the bomb and adds Vel (an archetype move).
    assert!(quiet(|| world.insert(e, (Bomb(Box::new(2)), Vel(3)))).is_err());
    assert_eq!(drops(), before + 1, "only the old value was dropped");
    world.check_consistency().unwrap();
    assert_eq!(*world.get::<Bomb>(e).unwrap().0, 2);
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(3)));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1)));
    // Replacing in place (no move) too.
    lit();
    assert!(quiet(|| world.insert_one(e, Bomb(Box::new(4)))).is_err());
    assert_eq!(*world.get::<Bomb>(e).unwrap().0, 4);
    world.check_consistency().unwrap();
    drop(world);
    assert_eq!(drops(), before + 3);
}

#[test]
fn clear_and_world_drop_drop_every_value_once_despite_a_panic() {
    let mut world = World::new();
    let es = world.spawn_batch((0..300).map(|i| (Bomb(Box::new(i)), Pos(i))));
    world.spawn_batch((0..50).map(|i| (Bomb(Box::new(i)),)));
    let before = drops();
    lit();
    assert!(quiet(|| world.clear_entities()).is_err());
    assert_eq!(drops(), before + 350);
    assert!(world.is_empty());
    assert!(!world.contains(es[0]));
    world.check_consistency().unwrap();
    // The chunks are reused.
    let again = world.spawn((Bomb(Box::new(7)), Pos(7)));
    assert_eq!(world.get::<Pos>(again), Ok(&Pos(7)));
    world.check_consistency().unwrap();

    let mut other = World::new();
    other.spawn_batch((0..100).map(|i| (Bomb(Box::new(i)),)));
    let before = drops();
    lit();
    assert!(quiet(move || drop(other)).is_err());
    assert_eq!(drops(), before + 100, "a panicking destructor does not stop the world's drop");
}

#[test]
fn commands_after_a_panicking_one_stay_queued() {
    let mut world = World::new();
    let a = world.spawn((Bomb(Box::new(1)),));
    let b = world.spawn((Pos(0),));
    let mut queue = CommandQueue::default();
    let mut commands = queue.commands(&world);
    commands.despawn(a);
    commands.insert(b, (Vel(2),));
    let c = commands.spawn((Pos(9),));
    lit();
    assert!(quiet(|| queue.apply(&mut world)).is_err());
    assert!(!world.contains(a));
    world.check_consistency().unwrap();
    assert_eq!(queue.len(), 2, "the commands after the panicking one wait");
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.get::<Vel>(b), Ok(&Vel(2)));
    assert_eq!(world.get::<Pos>(c), Ok(&Pos(9)));
    world.check_consistency().unwrap();
}

#[test]
fn queued_commands_drop_what_they_captured_exactly_once() {
    #[derive(Component, Debug)]
    #[repr(align(64))]
    struct Wide(u64);
    let mut world = World::new();
    let mut queue = CommandQueue::default();
    // Bundles with heap values, an over-aligned component and a closure
    // that captures nothing; none applied: dropping the queue drops them.
    let before = drops();
    {
        let mut commands = queue.commands(&world);
        for i in 0..100u64 {
            commands.spawn((Bomb(Box::new(i)), Wide(i)));
        }
        commands.add(|_: &mut World| Ok(()));
    }
    assert_eq!(queue.len(), 101);
    drop(queue);
    assert_eq!(drops(), before + 100);

    // A destructor that panics while the queue drops its closures: the
    // closures after it are still dropped, none twice.
    let mut queue = CommandQueue::default();
    let mut commands = queue.commands(&world);
    for i in 0..3u64 {
        commands.spawn((Bomb(Box::new(i)),));
    }
    let before = drops();
    lit();
    assert!(quiet(move || drop(queue)).is_err());
    assert_eq!(drops(), before + 3);

    // Appended, then applied: each bomb dropped once more, with its entity.
    let mut first = CommandQueue::default();
    let mut second = CommandQueue::default();
    let a: Vec<Entity> = (0..10u64).map(|i| first.commands(&world).spawn((Bomb(Box::new(i)), Wide(i)))).collect();
    let b = second.commands(&world).spawn((Wide(77),));
    first.append(&mut second);
    assert_eq!((first.len(), second.len()), (11, 0));
    drop(second);
    assert!(first.apply(&mut world).is_empty());
    assert!(first.is_empty());
    for (i, &e) in a.iter().enumerate() {
        assert_eq!(world.get::<Wide>(e).map(|w| w.0), Ok(i as u64));
        assert_eq!(std::ptr::from_ref(world.get::<Wide>(e).unwrap()) as usize % 64, 0);
    }
    assert_eq!(world.get::<Wide>(b).map(|w| w.0), Ok(77));
    let before = drops();
    world.clear_entities();
    assert_eq!(drops(), before + 10);

    // The buffer is reused: the same commands again allocate nothing new.
    let mut queue = CommandQueue::default();
    let record = |queue: &mut CommandQueue, world: &World| {
        let mut commands = queue.commands(world);
        for i in 0..1000u64 {
            commands.spawn((Pos(i),));
        }
    };
    record(&mut queue, &world);
    queue.apply(&mut world);
    let bytes = allocated_by(|| record(&mut queue, &world));
    assert_eq!(bytes, 0, "recording into a used queue allocated {bytes} bytes");
    queue.apply(&mut world);
    assert_eq!(world.len(), 2000);
}

// ----- 3. panics inside query loops keep their change marks ---------------

fn panicking_loops_keep_marks(run: impl Fn(&mut World, &mut QueryState<(Entity, &'static mut Pos)>, &AtomicUsize)) {
    let mut world = World::new();
    let es = world.spawn_batch((0..2000).map(|i| (Pos(i),)));
    let mut writer = world.query::<(Entity, &mut Pos)>();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.iter(&world).count();
    world.increment_change_tick();
    let written = AtomicUsize::new(0);
    assert!(quiet(|| run(&mut world, &mut writer, &written)).is_err());
    world.check_consistency().unwrap();
    world.increment_change_tick();
    let seen: Vec<Entity> = changed.iter(&world).collect();
    let want: Vec<Entity> = es.iter().copied().filter(|&e| world.get::<Pos>(e).unwrap().0 >= 1 << 20).collect();
    assert!(!want.is_empty());
    assert_eq!(written.load(Ordering::Relaxed), want.len());
    let mut seen_sorted = seen.clone();
    seen_sorted.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(seen_sorted, want_sorted, "every row written before the panic is seen as changed");
}

#[test]
fn a_panic_in_for_each_mut_keeps_the_rows_written_before_it() {
    panicking_loops_keep_marks(|world, q, written| {
        q.for_each_mut(world, |(_, mut p)| {
            if written.load(Ordering::Relaxed) == 3 {
                panic!("system bug");
            }
            p.0 += 1 << 20;
            written.fetch_add(1, Ordering::Relaxed);
        })
    });
}

#[test]
fn a_panic_in_par_for_each_mut_keeps_the_rows_written_before_it() {
    panicking_loops_keep_marks(|world, q, written| {
        q.par_for_each_mut(world, |(e, mut p)| {
            if e.index() % 997 == 500 {
                panic!("system bug");
            }
            if e.index() % 5 == 0 {
                p.0 += 1 << 20;
                written.fetch_add(1, Ordering::Relaxed);
            }
        })
    });
}

#[test]
fn a_panic_in_a_system_keeps_the_rows_written_before_it() {
    let mut world = World::new();
    let es = world.spawn_batch((0..100).map(|i| (Pos(i),)));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.iter(&world).count();
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<&mut Pos>| {
        q.for_each_mut(|mut p| {
            if p.0 == 2 {
                panic!("system bug");
            }
            p.0 += 1000;
        })
    });
    assert!(quiet(|| schedule.run(&mut world)).is_err());
    world.check_consistency().unwrap();
    world.increment_change_tick();
    let seen: Vec<Entity> = changed.iter(&world).collect();
    assert_eq!(seen, es[..2].to_vec());
}

#[test]
fn a_panic_in_a_group_task_keeps_the_rows_written_before_it() {
    let mut world = World::new();
    let es = world.spawn_batch((0..64).map(|i| (Pos(i),)));
    let mut groups = EntityGroups::new();
    for pair in es.chunks(8) {
        groups.push_group(pair).unwrap();
    }
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.iter(&world).count();
    world.insert_resource(groups);
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<&mut Pos>, groups: Res<EntityGroups>| {
        q.par_for_each_group_mut(
            &groups,
            &[0, 1, 2, 3],
            || (),
            |_, rows| {
                rows.get_mut(0).unwrap().0 += 1000;
                if rows.group() == 2 {
                    panic!("task bug");
                }
            },
        );
    });
    assert!(quiet(|| schedule.run(&mut world)).is_err());
    world.check_consistency().unwrap();
    world.increment_change_tick();
    let mut seen: Vec<Entity> = changed.iter(&world).collect();
    seen.sort();
    let want: Vec<Entity> = es.iter().copied().filter(|&e| world.get::<Pos>(e).unwrap().0 >= 1000).collect();
    assert_eq!(seen, want);
    assert!(want.contains(&es[16]), "the panicking group's write is kept");
}

// ----- 4. tick cells read while another thread writes ---------------------

#[test]
fn chunk_ticks_of_components_outside_a_systems_access_are_read_safely() {
    // A reader inspects the chunk tick of `Pos` through its own chunk view
    // while a parallel writer marks `Pos` rows; every tick cell is accessed
    // atomically, so this is no data race (the sanitizer and the value
    // checks below would show a torn or lost stamp).
    let mut world = World::new();
    world.spawn_batch((0..20_000).map(|i| (Pos(i), Vel(i))));
    let pos = world.register::<Pos>();
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<&mut Pos>| q.par_for_each_mut(|mut p| p.0 += 1));
    schedule.add_systems(move |mut q: Query<&Vel>| {
        q.for_each_chunk_mut(|view| {
            let t = view.changed_tick(pos).expect("the archetype has Pos");
            assert!(t.get() <= view.window().this_run().get() + 64);
        })
    });
    for _ in 0..20 {
        schedule.run(&mut world).unwrap();
    }
    world.check_consistency().unwrap();
}

// ----- 5. empty bundles ------------------------------------------------------

#[test]
fn empty_bundles_are_no_ops() {
    let mut world = World::new();
    let e = world.spawn((Pos(1),));
    assert_eq!(world.remove::<()>(e), Ok(()));
    assert_eq!(world.insert(e, ()), Ok(()));
    let empty = world.spawn(());
    assert_eq!(world.remove::<()>(empty), Ok(()));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1)));
    world.check_consistency().unwrap();
    let mut queue = CommandQueue::default();
    queue.commands(&world).remove::<()>(e);
    assert!(queue.apply(&mut world).is_empty());
    world.check_consistency().unwrap();
}

// ----- 9. entity groups fed hostile handles ------------------------------------

#[test]
fn groups_stay_small_for_huge_indices_and_report_unknown_handles() {
    let mut world = World::new();
    let real = world.spawn_batch((0..10).map(|i| (Pos(i),)));
    let forged = Entity::from_parts(u32::MAX - 1, 0);
    let mut groups = EntityGroups::new();
    // A bitset sized by the index would take 512 MiB.
    let bytes = allocated_by(|| {
        assert_eq!(groups.push_group(&[real[0], forged]), Ok(0));
        assert_eq!(groups.push_group(&[forged]), Err(forged), "still refuses a handle held twice");
        assert_eq!(groups.push_group(&real[1..]), Ok(1));
        assert_eq!(groups.push_group(&[real[3]]), Err(real[3]));
    });
    assert!(bytes < 64 * 1024, "{bytes} bytes allocated for 11 grouped entities");
    world.insert_resource(groups);
    world.insert_resource(Vec::<Result<u64, QueryError>>::new());
    let mut schedule = Schedule::new();
    schedule.add_systems(
        |mut q: Query<&Pos>, groups: Res<EntityGroups>, mut out: ResMut<Vec<Result<u64, QueryError>>>| {
            let found = std::sync::Mutex::new(Vec::new());
            q.par_for_each_group_mut(
                &groups,
                &[0],
                || (),
                |_, rows| {
                    for k in 0..rows.len() {
                        found.lock().unwrap().push(rows.get_mut(k).map(|p| p.0));
                    }
                },
            );
            out.extend(found.into_inner().unwrap());
        },
    );
    schedule.run(&mut world).unwrap();
    assert_eq!(
        world.resource::<Vec<Result<u64, QueryError>>>().unwrap(),
        &vec![Ok(0), Err(QueryError::NoSuchEntity(forged))]
    );
}
