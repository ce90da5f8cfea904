//! Bundles: sets of components spawned, inserted or removed together.
//!
//! A bundle is one component, a tuple of up to [`MAX_BUNDLE`] bundles
//! (`()` for none), or a struct with `#[derive(Bundle)]` whose fields are
//! bundles; nested bundles are flattened in declaration order. Nesting lifts the limit of 12: a bundle holds up to
//! [`MAX_BUNDLE_COMPONENTS`] (128) components, as long as one row of them
//! fits in a chunk.
//!
//! ```
//! use ecs_core::{Bundle, Component, StoreError, World};
//!
//! #[derive(Component)]
//! struct Pos(f32);
//! #[derive(Component)]
//! struct Vel(f32);
//! #[derive(Component)]
//! struct Mass(f32);
//!
//! #[derive(Bundle)]
//! struct Physics {
//!     vel: Vel,
//!     mass: Mass,
//! }
//!
//! #[derive(Bundle)]
//! struct Ball {
//!     pos: Pos,
//!     #[bundle]
//!     physics: Physics,
//! }
//!
//! let mut world = World::new();
//! let e = world.spawn(Ball { pos: Pos(0.0), physics: Physics { vel: Vel(1.0), mass: Mass(2.0) } });
//! assert_eq!(world.get::<Mass>(e).unwrap().0, 2.0);
//!
//! // Duplicates are refused across nesting, as in a flat tuple.
//! #[derive(Bundle)]
//! struct Twice {
//!     vel: Vel,
//!     #[bundle]
//!     physics: Physics,
//! }
//! let twice = Twice { vel: Vel(0.0), physics: Physics { vel: Vel(1.0), mass: Mass(1.0) } };
//! assert!(matches!(world.try_spawn(twice), Err(StoreError::DuplicateComponent(_))));
//! ```
//!
//! ## Tuples inside tuples
//! A single component is a bundle, and a tuple of bundles is a bundle, so
//! tuples nest and flatten: `world.spawn((a, (b, c)))` stores `A`, `B` and
//! `C`, exactly as `world.spawn((a, b, c))` would. Only types that
//! implement [`Component`] (through `#[derive(Component)]`) are stored as
//! one value, so a tuple is never stored as a component by accident.
//!
//! ```
//! use ecs_core::{Component, World};
//! #[derive(Component)]
//! struct A;
//! #[derive(Component)]
//! struct B(u8);
//! #[derive(Component)]
//! struct C(u16);
//! let mut world = World::new();
//! let e = world.spawn((A, (B(1), C(2))));
//! assert_eq!(world.get::<C>(e).unwrap().0, 2);
//! // One component alone is a bundle too.
//! let f = world.spawn(B(3));
//! assert_eq!(world.get::<B>(f).unwrap().0, 3);
//! ```

use std::mem::MaybeUninit;

use smallvec::SmallVec;

use crate::storage::component::{Component, ComponentId, Components};

/// Component ids of a bundle, in bundle order.
pub type BundleIds = SmallVec<[ComponentId; 8]>;

/// The most components one bundle *tuple* can hold; bundles with more nest
/// (see the [module docs](self)).
pub const MAX_BUNDLE: usize = 12;

/// The most components one bundle can hold, nested ones included.
pub const MAX_BUNDLE_COMPONENTS: usize = 128;

/// Column pointers of one bundle, in bundle order, on the stack. Room for
/// [`MAX_BUNDLE_COMPONENTS`] costs nothing until used (the array is not
/// initialised), and the type has no destructor, so spawning or inserting
/// keeps its pointers in registers.
#[derive(Clone, Copy)]
pub(crate) struct BundlePtrs {
    /// The first `len` are initialised.
    ptrs: [MaybeUninit<*mut u8>; MAX_BUNDLE_COMPONENTS],
    len: usize,
}

impl BundlePtrs {
    #[inline]
    pub(crate) fn new() -> Self {
        BundlePtrs { ptrs: [const { MaybeUninit::uninit() }; MAX_BUNDLE_COMPONENTS], len: 0 }
    }

    /// Appends one pointer. Bundles hold at most [`MAX_BUNDLE_COMPONENTS`]
    /// (checked when a bundle type is first registered, before the world
    /// changes), so this never overflows.
    #[inline]
    pub(crate) fn push(&mut self, ptr: *mut u8) {
        self.ptrs[self.len].write(ptr);
        self.len += 1;
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[*mut u8] {
        let init = &self.ptrs[..self.len];
        // SAFETY: `push` writes an element before it counts it, so the
        // first `len` are initialised; `MaybeUninit<T>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts(init.as_ptr().cast::<*mut u8>(), init.len()) }
    }
}

/// A statically known set of components: tuples of up to 12 components,
/// `()` for an entity with none, and structs with `#[derive(Bundle)]`
/// (which nest).
///
/// # Safety
/// `register_components` and `component_ids` list the same component ids,
/// [`Bundle::COMPONENT_COUNT`] of them (at most [`MAX_BUNDLE_COMPONENTS`]),
/// in one fixed order (the bundle order). `write` must write exactly those components, in that order, the
/// `i`-th to `columns[i]` at `row`; `read` the inverse.
pub unsafe trait Bundle: Send + Sync + Sized + 'static {
    /// How many components the bundle holds, nested ones included.
    const COMPONENT_COUNT: usize;

    /// Registers the components and lists their ids in bundle order.
    ///
    /// # Panics
    /// If a tuple (or `()`) stands where a component belongs (see the
    /// [module docs](self)), or the bundle holds more than
    /// [`MAX_BUNDLE_COMPONENTS`].
    fn register_components(components: &mut Components, ids: &mut BundleIds);

    /// Lists the ids in bundle order; `Err(type name)` for the first
    /// component that was never registered.
    ///
    /// # Panics
    /// As [`Bundle::register_components`].
    fn component_ids(components: &Components, ids: &mut BundleIds) -> Result<(), &'static str>;

    /// Moves each component into its column.
    ///
    /// # Safety
    /// `columns` has [`Bundle::COMPONENT_COUNT`] entries; `columns[i]` is the
    /// start of a column of the `i`-th component type in bundle order, `row`
    /// is a free row of it, and the old contents are not live values.
    unsafe fn write(self, columns: &[*mut u8], row: usize);

    /// Moves each component out of its column.
    ///
    /// # Safety
    /// `columns` has [`Bundle::COMPONENT_COUNT`] entries; `columns[i]` is the
    /// start of a column of the `i`-th component type in bundle order and
    /// `row` holds a live value in each; afterwards those values are dead.
    unsafe fn read(columns: &[*mut u8], row: usize) -> Self;
}

/// Refuses a bundle past [`MAX_BUNDLE_COMPONENTS`]; `ids` are the
/// bundle's ids listed so far.
#[inline]
fn check_component(ids: &BundleIds) {
    if ids.len() >= MAX_BUNDLE_COMPONENTS {
        too_many_components();
    }
}

#[cold]
#[inline(never)]
fn too_many_components() -> ! {
    panic!("a bundle holds at most {MAX_BUNDLE_COMPONENTS} components")
}

/// Registers component `T` of a bundle and appends its id: the step
/// `register_components` takes for each component (derived bundles call it).
///
/// # Panics
/// If `ids` already holds [`MAX_BUNDLE_COMPONENTS`].
#[inline]
pub fn register_component<T: Component>(components: &mut Components, ids: &mut BundleIds) {
    check_component(ids);
    ids.push(components.register::<T>());
}

/// Appends the id of component `T` of a bundle, or `Err(type name)` if it
/// was never registered: the step `component_ids` takes for each component
/// (derived bundles call it).
///
/// # Panics
/// As [`register_component`].
#[inline]
pub fn component_id<T: Component>(components: &Components, ids: &mut BundleIds) -> Result<(), &'static str> {
    check_component(ids);
    match components.id::<T>() {
        Some(id) => {
            ids.push(id);
            Ok(())
        }
        None => Err(std::any::type_name::<T>()),
    }
}

/// Moves `value` into row `row` of column `columns[index]`: the step
/// [`Bundle::write`] takes for each component (derived bundles call it).
///
/// # Safety
/// `columns[index]` is the start of a column of `T` values, `row` is a
/// free row of it, and the old contents there are not a live value.
///
/// # Panics
/// If `index` is out of bounds of `columns` (which the caller's contract
/// excludes).
#[inline(always)]
pub unsafe fn write_component<T: Component>(columns: &[*mut u8], index: usize, row: usize, value: T) {
    // SAFETY: the caller guarantees the column holds `T` values and that
    // `row` is a free slot in it, so the slot is in bounds and aligned.
    unsafe { columns[index].cast::<T>().add(row).write(value) }
}

/// Moves the `T` at row `row` of column `columns[index]` out: the step
/// [`Bundle::read`] takes for each component (derived bundles call it).
///
/// # Safety
/// `columns[index]` is the start of a column of `T` values and `row` holds
/// a live value, which is dead afterwards (the caller must not drop or read
/// it again).
///
/// # Panics
/// If `index` is out of bounds of `columns` (which the caller's contract
/// excludes).
#[inline(always)]
pub unsafe fn read_component<T: Component>(columns: &[*mut u8], index: usize, row: usize) -> T {
    // SAFETY: the caller guarantees a live `T` at `row` of this column and
    // gives up that value.
    unsafe { columns[index].cast::<T>().add(row).read() }
}

// SAFETY: one component, listed once, at `columns[0]`.
unsafe impl<C: Component> Bundle for C {
    const COMPONENT_COUNT: usize = 1;

    #[inline]
    fn register_components(components: &mut Components, ids: &mut BundleIds) {
        register_component::<C>(components, ids);
    }

    #[inline]
    fn component_ids(components: &Components, ids: &mut BundleIds) -> Result<(), &'static str> {
        component_id::<C>(components, ids)
    }

    #[inline(always)]
    unsafe fn write(self, columns: &[*mut u8], row: usize) {
        debug_assert_eq!(columns.len(), 1);
        // SAFETY: the caller guarantees `columns[0]` holds `C` values and
        // `row` is a free slot in it.
        unsafe { write_component::<C>(columns, 0, row, self) }
    }

    #[inline(always)]
    unsafe fn read(columns: &[*mut u8], row: usize) -> Self {
        debug_assert_eq!(columns.len(), 1);
        // SAFETY: the caller guarantees a live `C` at `row` of `columns[0]`,
        // which becomes dead here.
        unsafe { read_component::<C>(columns, 0, row) }
    }
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: `register_components` and `component_ids` list the
        // elements' components in tuple order, each element's in its own
        // order, and `COMPONENT_COUNT` counts them. `write`/`read` hand
        // element `i` the sub-slice of columns starting at the sum of the
        // counts of the elements before it, `COMPONENT_COUNT` long: the
        // same positions the listing gave its components.
        #[allow(clippy::unused_unit, reason = "the expansion for the empty tuple returns ()")]
        #[allow(unused_mut, unused_variables, unused_assignments, reason = "the expansion for the empty tuple uses nothing")]
        unsafe impl<$($name: Bundle),*> Bundle for ($($name,)*) {
            const COMPONENT_COUNT: usize = 0 $(+ <$name as Bundle>::COMPONENT_COUNT)*;

            #[inline]
            fn register_components(_components: &mut Components, _ids: &mut BundleIds) {
                $( <$name as Bundle>::register_components(_components, _ids); )*
            }

            #[inline]
            fn component_ids(_components: &Components, _ids: &mut BundleIds) -> Result<(), &'static str> {
                $( <$name as Bundle>::component_ids(_components, _ids)?; )*
                Ok(())
            }

            #[allow(non_snake_case, reason = "the macro binds tuple elements to their type parameter names")]
            #[inline]
            unsafe fn write(self, columns: &[*mut u8], row: usize) {
                debug_assert_eq!(columns.len(), Self::COMPONENT_COUNT);
                let ($($name,)*) = self;
                let mut start = 0;
                $(
                    let end = start + <$name as Bundle>::COMPONENT_COUNT;
                    // SAFETY: the caller guarantees these columns hold this
                    // element's components, in its order, free at `row`.
                    unsafe { $name.write(&columns[start..end], row) };
                    start = end;
                )*
            }

            #[inline]
            unsafe fn read(columns: &[*mut u8], row: usize) -> Self {
                debug_assert_eq!(columns.len(), Self::COMPONENT_COUNT);
                let mut start = 0;
                ($(
                    {
                        let end = start + <$name as Bundle>::COMPONENT_COUNT;
                        // SAFETY: the caller guarantees live values of this
                        // element's components in these columns at `row`,
                        // which become dead here.
                        let value = unsafe { <$name as Bundle>::read(&columns[start..end], row) };
                        start = end;
                        value
                    },
                )*)
            }
        }
    };
}

tuple_bundle!();
tuple_bundle!(A 0);
tuple_bundle!(A 0, B 1);
tuple_bundle!(A 0, B 1, C 2);
tuple_bundle!(A 0, B 1, C 2, D 3);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component)]
    struct C0(#[expect(dead_code, reason = "only the type matters")] u8);
    #[derive(crate::Component)]
    struct C1(#[expect(dead_code, reason = "only the type matters")] u16);
    #[derive(crate::Component)]
    struct C2(#[expect(dead_code, reason = "only the type matters")] u32);
    #[derive(crate::Component)]
    struct C3(#[expect(dead_code, reason = "only the type matters")] u64);

    #[test]
    fn counts() {
        assert_eq!(<() as Bundle>::COMPONENT_COUNT, 0);
        assert_eq!(<C0 as Bundle>::COMPONENT_COUNT, 1);
        assert_eq!(<(C0,) as Bundle>::COMPONENT_COUNT, 1);
        assert_eq!(<(C0, (C1, (C2, ()), C3)) as Bundle>::COMPONENT_COUNT, 4);
        assert_eq!(<((C0, C1, C2, C3), (C0, C1, C2, C3), (C0, C1, C2, C3)) as Bundle>::COMPONENT_COUNT, 12);
    }

    #[test]
    fn pointers_go_past_the_tuple_limit() {
        let mut ptrs = BundlePtrs::new();
        assert!(ptrs.as_slice().is_empty());
        let mut cells = [0u8; MAX_BUNDLE_COMPONENTS];
        let base = cells.as_mut_ptr();
        for i in 0..cells.len() {
            ptrs.push(base.wrapping_add(i));
            assert_eq!(ptrs.as_slice().len(), i + 1);
        }
        assert!(ptrs.as_slice().iter().enumerate().all(|(i, &p)| p == base.wrapping_add(i)));
    }

    #[test]
    fn a_bundle_past_the_limit_is_refused_when_registered() {
        let mut components = Components::default();
        let mut ids = BundleIds::new();
        for _ in 0..MAX_BUNDLE_COMPONENTS / 4 {
            <(C0, C1, C2, C3) as Bundle>::register_components(&mut components, &mut ids);
        }
        assert_eq!(ids.len(), MAX_BUNDLE_COMPONENTS);
        let refused = std::panic::catch_unwind(move || {
            let mut components = components;
            register_component::<C0>(&mut components, &mut ids)
        });
        assert!(refused.is_err());
    }
}
