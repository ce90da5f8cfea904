//! [`ParamSet`]: parameters that conflict with each other, used one at a time.

use crate::query::ChunkStats;
use crate::storage::tick::TickWindow;
use crate::system::{SystemAccess, SystemMeta, SystemParam, SystemParamItem};
use crate::world::World;

/// Up to eight system parameters that may conflict with each other (two
/// queries writing the same component, a query reading what another writes),
/// borrowed one at a time through `p0()`, `p1()`, ...
///
/// A system refuses two parameters that could alias, such as
/// `Query<&mut Pos>` and `Query<&Pos>`. Inside a `ParamSet` they are
/// accepted: each accessor borrows the whole set mutably, so the borrow
/// checker lets only one of them be alive at a time. The set's members are
/// still checked against the system's other parameters, and against other
/// systems the set counts as all its members at once.
///
/// ```
/// use ecs_core::prelude::*;
/// use ecs_core::ParamSet;
///
/// #[derive(Component)]
/// struct Pos(f32);
///
/// /// Moves every position towards their mean: read them all, then write them.
/// fn gather(mut set: ParamSet<(Query<&Pos>, Query<&mut Pos>)>) {
///     let (mut sum, mut n) = (0.0, 0.0);
///     set.p0().for_each(|p| {
///         sum += p.0;
///         n += 1.0;
///     });
///     let mean = sum / n;
///     set.p1().for_each_mut(|mut p| p.0 += (mean - p.0) * 0.5);
/// }
///
/// let mut world = World::new();
/// let a = world.spawn(Pos(0.0));
/// let b = world.spawn(Pos(4.0));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(gather);
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.get::<Pos>(a).unwrap().0, 1.0);
/// assert_eq!(world.get::<Pos>(b).unwrap().0, 3.0);
/// ```
pub struct ParamSet<'w, 's, T: SystemParam> {
    state: &'s mut T::State,
    world: &'w World,
    window: TickWindow,
}

/// What `access` gained over its first `base` entries of each kind.
fn added_since(access: &SystemAccess, base: &SystemAccess) -> SystemAccess {
    SystemAccess {
        queries: access.queries[base.queries.len()..].to_vec(),
        resource_reads: access.resource_reads[base.resource_reads.len()..].to_vec(),
        resource_writes: access.resource_writes[base.resource_writes.len()..].to_vec(),
    }
}

macro_rules! param_set {
    ($($param:ident $get:ident $idx:tt),*) => {
        // SAFETY: `init_state` records every member's access in `meta` (each
        // member is initialised against the access the system had before the
        // set, so members are checked against the other parameters but not
        // against each other), and the accessors hand out one member at a
        // time (each borrows the set mutably).
        unsafe impl<$($param: SystemParam),*> SystemParam for ParamSet<'_, '_, ($($param,)*)> {
            type State = ($($param::State,)*);
            type Item<'w, 's> = ParamSet<'w, 's, ($($param,)*)>;

            fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
                let base = meta.access.clone();
                let mut added = SystemAccess::default();
                let state = ($({
                    let mut member = SystemMeta { name: meta.name.clone(), access: base.clone(), error: None };
                    let state = $param::init_state(world, &mut member);
                    if let Some(error) = member.error {
                        meta.refuse(error);
                    }
                    let new = added_since(&member.access, &base);
                    added.queries.extend(new.queries);
                    added.resource_reads.extend(new.resource_reads);
                    added.resource_writes.extend(new.resource_writes);
                    state
                },)*);
                meta.access.queries.extend(added.queries);
                meta.access.resource_reads.extend(added.resource_reads);
                meta.access.resource_writes.extend(added.resource_writes);
                state
            }

            fn validate(state: &Self::State, world: &World) -> Result<(), String> {
                $( $param::validate(&state.$idx, world)?; )*
                Ok(())
            }

            unsafe fn get_param<'w, 's>(state: &'s mut Self::State, world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
                ParamSet { state, world, window }
            }

            fn apply(state: &mut Self::State, world: &mut World, errors: &mut Vec<crate::StoreError>) {
                $( $param::apply(&mut state.$idx, world, errors); )*
            }

            fn report(state: &Self::State, stats: &mut Vec<ChunkStats>) {
                $( $param::report(&state.$idx, stats); )*
            }
        }

        impl<$($param: SystemParam),*> ParamSet<'_, '_, ($($param,)*)> {
            $(
                #[doc = concat!("Member ", stringify!($idx), " of the set; the set stays borrowed while it is in use.")]
                pub fn $get(&mut self) -> SystemParamItem<'_, '_, $param> {
                    // SAFETY: the system holds the access of every member
                    // (recorded by `init_state`, which is how `get_param`'s
                    // caller got this set), and `&mut self` keeps any other
                    // member from being alive at the same time.
                    unsafe { $param::get_param(&mut self.state.$idx, self.world, self.window) }
                }
            )*
        }
    };
}

param_set!(P0 p0 0, P1 p1 1);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2, P3 p3 3);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2, P3 p3 3, P4 p4 4);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2, P3 p3 3, P4 p4 4, P5 p5 5);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2, P3 p3 3, P4 p4 4, P5 p5 5, P6 p6 6);
param_set!(P0 p0 0, P1 p1 1, P2 p2 2, P3 p3 3, P4 p4 4, P5 p5 5, P6 p6 6, P7 p7 7);
