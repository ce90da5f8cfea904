//! # ecs-core-macros: the derive macros of `ecs-core`
//!
//! Use them through `ecs-core`, which re-exports each derive next to the
//! trait of the same name:
//!
//! ```
//! use ecs_core::{Bundle, SystemParam};
//! ```
//!
//! - [`macro@SystemParam`]: a struct of system parameters is itself a system
//!   parameter. It fetches, validates, applies and reports exactly what the
//!   tuple of its fields would, and records the same accesses, so conflicts
//!   between its fields, or between it and the system's other parameters,
//!   are found as for plain parameters.
//! - [`macro@Component`]: marks a type as storable in the world. Only
//!   types that implement `Component` are stored as one value; everything
//!   else in a bundle position (a tuple, a derived bundle) is a bundle and is
//!   flattened, so `world.spawn((a, (b, c)))` stores `A`, `B` and `C`, and a
//!   tuple is never stored as a component by accident.
//! - [`macro@Bundle`]: a struct of bundles (components, tuples, other derived
//!   bundles) is a bundle, flattened in declaration order. A bundle is no
//!   longer limited to a flat tuple of 12 components (up to 128,
//!   `ecs_core::storage::bundle::MAX_BUNDLE_COMPONENTS`).
//!
//! ## Why `Component` is derived
//! An earlier version implemented `Component` for every `Send + Sync +
//! 'static` type. That made a tuple, or a derived bundle, a component as far
//! as the type system could tell, and stable Rust cannot pick "bundle" over
//! "component" for a tuple element, so `world.spawn((a, (b, c)))` could not
//! be flattened. With the derive, the two readings never overlap. The cost
//! is one attribute per component type, and a newtype for a foreign type
//! (`struct Position(glam::Vec3)`), as in bevy.

//! ## Paths
//! The generated code names `::ecs_core`, so the crate that uses a derive
//! must depend on `ecs-core` under that name.

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

mod bundle;
mod component;
mod system_param;

/// Derives `ecs_core::Component`: values of the type can be stored in the
/// world, one column per type. Generic types get the implementation
/// wherever they are `Send + Sync + 'static`.
///
/// ```
/// use ecs_core::{Component, World};
///
/// #[derive(Component, Debug, PartialEq)]
/// struct Health(u32);
///
/// #[derive(Component)]
/// struct Tagged<T: Send + Sync + 'static>(T);
///
/// let mut world = World::new();
/// let e = world.spawn((Health(3), Tagged(1u8)));
/// assert_eq!(world.get::<Health>(e), Ok(&Health(3)));
/// assert_eq!(world.get::<Tagged<u8>>(e).unwrap().0, 1);
/// ```
///
/// A type that is not a component cannot be queried or spawned:
///
/// ```compile_fail
/// use ecs_core::World;
/// struct NotAComponent;
/// let mut world = World::new();
/// world.spawn(NotAComponent);
/// ```
#[proc_macro_derive(Component)]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    component::derive(&input).into()
}

/// Derives `ecs_core::SystemParam` for a struct whose fields are system
/// parameters. The struct takes the lifetimes `'w` (what is borrowed from
/// the world) and `'s` (what is borrowed from the parameter's state), as
/// its fields need them; no other lifetimes.
///
/// The generated implementation delegates every method to the tuple of the
/// fields' parameters (nested tuples beyond 12 fields): the state is the
/// tuple's state, `init_state` records the tuple's accesses (so two fields
/// that conflict refuse the system, and so does a field that conflicts with
/// another parameter of the system), `validate` reports a missing resource
/// of any field, `get_param` fetches the tuple and moves its items into the
/// struct's fields, and `apply` and `report` run the fields' in order. A
/// derived parameter can be a field of another one.
///
/// ```
/// use ecs_core::prelude::*;
/// use ecs_core::SystemParam;
///
/// #[derive(Component)]
/// struct Pos(f32);
/// #[derive(Component)]
/// struct Vel(f32);
/// struct Time(f32);
///
/// #[derive(SystemParam)]
/// struct Movers<'w, 's> {
///     query: Query<'w, 's, (&'static mut Pos, &'static Vel)>,
///     time: Res<'w, Time>,
/// }
///
/// /// Derived parameters nest.
/// #[derive(SystemParam)]
/// struct Motion<'w, 's> {
///     movers: Movers<'w, 's>,
///     frames: Local<'s, u32>,
/// }
///
/// fn integrate(mut motion: Motion) {
///     *motion.frames += 1;
///     let dt = motion.movers.time.0;
///     motion.movers.query.for_each_mut(|(mut pos, vel)| pos.0 += vel.0 * dt);
/// }
///
/// let mut world = World::new();
/// world.insert_resource(Time(0.5));
/// let e = world.spawn((Pos(0.0), Vel(2.0)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(integrate);
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.get::<Pos>(e).unwrap().0, 1.0);
/// ```
///
/// Fields that conflict are refused as they would be as separate
/// parameters:
///
/// ```
/// use ecs_core::prelude::*;
/// use ecs_core::{Component, IntoSystem, System, SystemParam};
///
/// #[derive(Component)]
/// struct Pos(f32);
///
/// #[derive(SystemParam)]
/// struct Twice<'w, 's> {
///     read: Query<'w, 's, &'static Pos>,
///     write: Query<'w, 's, &'static mut Pos>,
/// }
///
/// fn sys(_: Twice) {}
///
/// let mut world = World::new();
/// let mut system = sys.into_system();
/// assert!(system.run(&mut world).unwrap_err().contains("conflict"));
/// ```
#[proc_macro_derive(SystemParam)]
pub fn derive_system_param(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    system_param::derive(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Derives `ecs_core::Bundle` for a struct whose fields are bundles:
/// components, tuples of bundles, or other derived bundles.
///
/// The bundle's components are its fields' in declaration order, a nested
/// bundle's flattened in its place. (`#[bundle]` on a field is accepted and
/// changes nothing; it was once needed to mark a nested bundle.) As with
/// tuples, the world refuses (with `StoreError::DuplicateComponent`) a
/// bundle that names one component type twice, also across nesting.
///
/// A bundle holds at most 128 components
/// (`ecs_core::storage::bundle::MAX_BUNDLE_COMPONENTS`; a larger derived
/// bundle fails to compile where it is used). A bundle struct may not
/// implement `Drop` (spawning moves its fields out).
///
/// ```
/// use ecs_core::{Bundle, Component, World};
///
/// #[derive(Component, Debug, PartialEq)]
/// struct Pos(f32);
/// #[derive(Component, Debug, PartialEq)]
/// struct Vel(f32);
/// #[derive(Component)]
/// struct Name(&'static str);
/// #[derive(Component)]
/// struct Health(u32);
///
/// #[derive(Bundle)]
/// struct Body {
///     pos: Pos,
///     vel: Vel,
/// }
///
/// #[derive(Bundle)]
/// struct Unit {
///     name: Name,
///     body: Body,
///     /// A tuple-typed field is a nested bundle too.
///     extra: (Health,),
/// }
///
/// let mut world = World::new();
/// let e = world
///     .spawn(Unit { name: Name("scout"), body: Body { pos: Pos(1.0), vel: Vel(2.0) }, extra: (Health(3),) });
/// assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
/// assert_eq!(world.get::<Health>(e).unwrap().0, 3);
///
/// // Insert and remove take bundles too.
/// let body: Body = world.remove(e).unwrap();
/// assert_eq!(body.vel, Vel(2.0));
/// assert!(world.get::<Pos>(e).is_err());
/// world.insert(e, body).unwrap();
/// assert_eq!(world.get::<Vel>(e), Ok(&Vel(2.0)));
/// ```
#[proc_macro_derive(Bundle, attributes(bundle))]
pub fn derive_bundle(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    bundle::derive(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// The most elements one tuple may have and still be a system parameter or
/// a bundle in `ecs-core`.
const MAX_TUPLE: usize = 12;

/// `items` as a tuple, nested so that no tuple has more than [`MAX_TUPLE`]
/// elements (a tuple of tuples of up to 12 each, recursively).
fn nest_tuple(items: Vec<proc_macro2::TokenStream>) -> proc_macro2::TokenStream {
    if items.len() <= MAX_TUPLE {
        return quote::quote!((#(#items,)*));
    }
    let mut groups = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let group: Vec<_> = items.by_ref().take(MAX_TUPLE).collect();
        groups.push(quote::quote!((#(#group,)*)));
    }
    nest_tuple(groups)
}
