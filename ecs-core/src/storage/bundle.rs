//! Bundles: sets of components spawned, inserted or removed together.
//!
//! A bundle is a tuple of up to [`MAX_BUNDLE`] components, `()` for none,
//! or a struct with `#[derive(Bundle)]` whose fields are components and
//! nested bundles (`#[bundle]` fields and tuple-typed fields), flattened in
//! declaration order. Nesting lifts the limit of 12: a derived bundle holds
//! as many components as a chunk row fits.
//!
//! ```
//! use ecs_core::{Bundle, StoreError, World};
//!
//! struct Pos(f32);
//! struct Vel(f32);
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
//! let e = world.spawn(Ball { pos: Pos(0.0), physics: Physics { vel: Vel(1.0), mass: Mass(2.0) } }).unwrap();
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
//! assert!(matches!(world.spawn(twice), Err(StoreError::DuplicateComponent(_))));
//! ```
//!
//! ## Tuples inside tuples
//! Every `Send + Sync + 'static` type is a [`Component`], tuples included,
//! so a tuple inside a bundle tuple, as in `world.spawn((a, (b, c)))`, can
//! only reach the store as one value: stable Rust cannot choose the bundle
//! reading of an element over the component one. Rather than store the
//! tuple `(B, C)` as a component by accident, a bundle refuses a tuple (or
//! `()`) where a component belongs: the spawn, insert or remove panics
//! with a message naming the tuple, before the world changes. Flatten such
//! a tuple by hand, or nest it in a derived bundle, where a tuple-typed
//! field is a nested bundle.
//!
//! ```should_panic
//! use ecs_core::World;
//! struct A;
//! struct B;
//! struct C;
//! let mut world = World::new();
//! let _ = world.spawn((A, (B, C))); // panics: `(B, C)` is a tuple, not a component
//! ```
//!
//! A struct deriving `Bundle` is a component in the same way and cannot be
//! told from one inside a tuple: nest it as a `#[bundle]` field instead.

use smallvec::SmallVec;

use crate::storage::component::{Component, ComponentId, Components};

/// Component ids of a bundle, in bundle order.
pub type BundleIds = SmallVec<[ComponentId; 8]>;

/// The most components one bundle *tuple* can hold; bundles with more nest
/// (see the [module docs](self)).
pub const MAX_BUNDLE: usize = 12;

/// Column pointers of one bundle, in bundle order; on the stack up to
/// [`MAX_BUNDLE`] of them, so spawning a tuple never allocates.
#[derive(Clone)]
pub(crate) struct BundlePtrs {
    ptrs: SmallVec<[*mut u8; MAX_BUNDLE]>,
}

impl BundlePtrs {
    #[inline]
    pub(crate) fn new() -> Self {
        BundlePtrs { ptrs: SmallVec::new() }
    }

    /// Appends one pointer.
    #[inline]
    pub(crate) fn push(&mut self, ptr: *mut u8) {
        self.ptrs.push(ptr);
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[*mut u8] {
        &self.ptrs
    }
}

/// A statically known set of components: tuples of up to 12 components,
/// `()` for an entity with none, and structs with `#[derive(Bundle)]`
/// (which nest).
///
/// # Safety
/// `register_components` and `component_ids` list the same component ids,
/// [`Bundle::COMPONENT_COUNT`] of them, in one fixed order (the bundle
/// order). `write` must write exactly those components, in that order, the
/// `i`-th to `columns[i]` at `row`; `read` the inverse.
pub unsafe trait Bundle: Send + Sync + Sized + 'static {
    /// How many components the bundle holds, nested ones included.
    const COMPONENT_COUNT: usize;

    /// Registers the components and lists their ids in bundle order.
    ///
    /// # Panics
    /// If a tuple (or `()`) stands where a component belongs (see the
    /// [module docs](self)).
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

/// Whether `T` is a tuple type (`()` included), which a bundle never
/// stores as one component. Told from the type's name: the compiler names
/// every tuple type `(..)`, and no other sized type's name starts with `(`.
fn is_tuple<T>() -> bool {
    std::any::type_name::<T>().starts_with('(')
}

#[cold]
#[inline(never)]
fn refuse_tuple<T>() -> ! {
    panic!(
        "bundle element `{}` is a tuple, not a component: a tuple inside a bundle tuple cannot be flattened \
         (every Send + Sync + 'static type is a component, tuples too); list its components in the outer tuple, \
         or nest it as a field of a #[derive(Bundle)] struct",
        std::any::type_name::<T>()
    )
}

/// Registers component `T` of a bundle and appends its id: the step
/// `register_components` takes for each component (derived bundles call it).
///
/// # Panics
/// If `T` is a tuple (see the [module docs](self)).
#[inline]
pub fn register_component<T: Component>(components: &mut Components, ids: &mut BundleIds) {
    if is_tuple::<T>() {
        refuse_tuple::<T>();
    }
    ids.push(components.register::<T>());
}

/// Appends the id of component `T` of a bundle, or `Err(type name)` if it
/// was never registered: the step `component_ids` takes for each component
/// (derived bundles call it).
///
/// # Panics
/// If `T` is a tuple (see the [module docs](self)).
#[inline]
pub fn component_id<T: Component>(components: &Components, ids: &mut BundleIds) -> Result<(), &'static str> {
    if is_tuple::<T>() {
        refuse_tuple::<T>();
    }
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

/// `1` per element, for counting tuple elements in a constant.
macro_rules! one {
    ($name:ident) => {
        1
    };
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: `register_components` and `component_ids` list the
        // elements in tuple order, one each, and `COMPONENT_COUNT` counts
        // them; `write`/`read` touch exactly those components, the `i`-th at
        // `columns[i]`.
        #[allow(clippy::unused_unit)]
        unsafe impl<$($name: Component),*> Bundle for ($($name,)*) {
            const COMPONENT_COUNT: usize = 0 $(+ one!($name))*;

            fn register_components(_components: &mut Components, _ids: &mut BundleIds) {
                $( register_component::<$name>(_components, _ids); )*
            }

            fn component_ids(_components: &Components, _ids: &mut BundleIds) -> Result<(), &'static str> {
                $( component_id::<$name>(_components, _ids)?; )*
                Ok(())
            }

            #[allow(non_snake_case)]
            #[inline]
            unsafe fn write(self, _columns: &[*mut u8], _row: usize) {
                debug_assert_eq!(_columns.len(), Self::COMPONENT_COUNT);
                let ($($name,)*) = self;
                $(
                    // SAFETY: the caller guarantees column `$idx` holds
                    // `$name` values and `_row` is a free slot in it.
                    unsafe { _columns[$idx].cast::<$name>().add(_row).write($name) };
                )*
            }

            #[inline]
            unsafe fn read(_columns: &[*mut u8], _row: usize) -> Self {
                debug_assert_eq!(_columns.len(), Self::COMPONENT_COUNT);
                // SAFETY: the caller guarantees each column holds a live
                // value of its type at `_row`, which becomes dead here.
                ($( unsafe { _columns[$idx].cast::<$name>().add(_row).read() }, )*)
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

    #[test]
    fn tuples_are_told_from_components() {
        struct A;
        assert!(is_tuple::<()>());
        assert!(is_tuple::<(A,)>());
        assert!(is_tuple::<(A, (u8, u16))>());
        assert!(!is_tuple::<A>());
        assert!(!is_tuple::<[u8; 2]>());
        assert!(!is_tuple::<Option<(u8, u8)>>());
        assert!(!is_tuple::<fn((u8,))>());
        assert!(!is_tuple::<&'static (u8, u8)>());
    }

    #[test]
    fn counts() {
        assert_eq!(<() as Bundle>::COMPONENT_COUNT, 0);
        assert_eq!(<(u8,) as Bundle>::COMPONENT_COUNT, 1);
        assert_eq!(<(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, bool, char) as Bundle>::COMPONENT_COUNT, 12);
    }

    #[test]
    fn pointers_spill_past_the_tuple_limit() {
        let mut ptrs = BundlePtrs::new();
        let mut cells = [0u8; 40];
        let base = cells.as_mut_ptr();
        for i in 0..cells.len() {
            ptrs.push(base.wrapping_add(i));
        }
        assert_eq!(ptrs.as_slice().len(), 40);
        assert_eq!(ptrs.as_slice()[39], base.wrapping_add(39));
    }
}
