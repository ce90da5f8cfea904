//! Bundles: tuples of components spawned, inserted or removed together.

use smallvec::SmallVec;

use crate::storage::component::{Component, ComponentId, Components};

/// Component ids of a bundle, in tuple order.
pub type BundleIds = SmallVec<[ComponentId; 8]>;

/// The most components one bundle tuple can hold.
pub const MAX_BUNDLE: usize = 12;

/// Column pointers of one bundle, in tuple order, on the stack.
#[derive(Clone, Copy)]
pub(crate) struct BundlePtrs {
    ptrs: [*mut u8; MAX_BUNDLE],
    len: usize,
}

impl BundlePtrs {
    #[inline]
    pub(crate) fn new() -> Self {
        BundlePtrs { ptrs: [std::ptr::null_mut(); MAX_BUNDLE], len: 0 }
    }

    /// Appends one pointer. Bundles have at most [`MAX_BUNDLE`] elements,
    /// so this never overflows.
    #[inline]
    pub(crate) fn push(&mut self, ptr: *mut u8) {
        self.ptrs[self.len] = ptr;
        self.len += 1;
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[*mut u8] {
        &self.ptrs[..self.len]
    }
}

/// A statically known set of components: tuples of up to 12 components,
/// and `()` for an entity with none.
///
/// # Safety
/// `write` must write exactly the components `register_components` lists,
/// in the same order, each to `columns[i]` at `row`; `read` the inverse.
pub unsafe trait Bundle: Send + Sync + Sized + 'static {
    /// Registers the components and lists their ids in tuple order.
    fn register_components(components: &mut Components, ids: &mut BundleIds);

    /// Lists the ids in tuple order; `Err(type name)` for the first
    /// component that was never registered.
    fn component_ids(components: &Components, ids: &mut BundleIds) -> Result<(), &'static str>;

    /// Moves each component into its column.
    ///
    /// # Safety
    /// `columns[i]` is the start of a column of the `i`-th component type,
    /// `row` is a free row of it, and the old contents are not live values.
    unsafe fn write(self, columns: &[*mut u8], row: usize);

    /// Moves each component out of its column.
    ///
    /// # Safety
    /// `columns[i]` is the start of a column of the `i`-th component type and
    /// `row` holds a live value in each; afterwards those values are dead.
    unsafe fn read(columns: &[*mut u8], row: usize) -> Self;
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: `write`/`read` touch exactly the listed components, each at
        // `columns[i]`, in the order `register_components` lists them.
        #[allow(clippy::unused_unit)]
        unsafe impl<$($name: Component),*> Bundle for ($($name,)*) {
            fn register_components(_components: &mut Components, _ids: &mut BundleIds) {
                $( _ids.push(_components.register::<$name>()); )*
            }

            fn component_ids(_components: &Components, _ids: &mut BundleIds) -> Result<(), &'static str> {
                $(
                    match _components.id::<$name>() {
                        Some(id) => _ids.push(id),
                        None => return Err(std::any::type_name::<$name>()),
                    }
                )*
                Ok(())
            }

            #[allow(non_snake_case)]
            #[inline]
            unsafe fn write(self, _columns: &[*mut u8], _row: usize) {
                let ($($name,)*) = self;
                $(
                    // SAFETY: the caller guarantees column `$idx` holds
                    // `$name` values and `_row` is a free slot in it.
                    unsafe { _columns[$idx].cast::<$name>().add(_row).write($name) };
                )*
            }

            #[inline]
            unsafe fn read(_columns: &[*mut u8], _row: usize) -> Self {
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
