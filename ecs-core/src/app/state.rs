//! States: a finite state machine per enum type (menu, loading, playing,
//! paused), with schedules that run on the way in and out.
//!
//! [`App::init_state`](super::App::init_state) stores [`State<S>`] (the
//! current value) and [`NextState<S>`] (a requested change). Systems request
//! a change with `next.set(s)`; it is applied once per frame in the
//! [`StateTransition`](super::StateTransition) schedule (after
//! [`PreUpdate`](super::PreUpdate), before the fixed steps and
//! [`Update`](super::Update)). A transition from `a` to `b` (`a != b`; a
//! request for the current state does nothing):
//!
//! 1. sets [`State<S>`] to `b` and sends a [`StateTransitionEvent`];
//! 2. runs [`OnExit(a)`](OnExit), then despawns every entity with a
//!    [`StateScoped(a)`](StateScoped) component;
//! 3. runs [`OnTransition { from: a, to: b }`](OnTransition);
//! 4. runs [`OnEnter(b)`](OnEnter).
//!
//! The initial state is entered (its `OnEnter` runs, no exit) at the first
//! transition point, in the first frame, after the startup schedules. Each
//! of these schedules applies its own commands when it ends, so `OnEnter`
//! sees what `OnExit` spawned or despawned. Several state types transition
//! in the order they were initialized.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
//! enum Game {
//!     #[default]
//!     Menu,
//!     Playing,
//! }
//! impl States for Game {}
//!
//! #[derive(Default)]
//! struct Log(Vec<String>);
//! fn start(mut next: ResMut<NextState<Game>>) {
//!     next.set(Game::Playing);
//! }
//! let mut app = App::new();
//! app.init_state::<Game>()
//!     .init_resource::<Log>()
//!     .add_systems(Update, start.run_if(in_state(Game::Menu)))
//!     .add_systems(OnEnter(Game::Playing), |mut log: ResMut<Log>| log.0.push("play".into()))
//!     .add_systems(OnExit(Game::Menu), |mut log: ResMut<Log>| log.0.push("leave menu".into()));
//! app.update(); // Menu entered; `start` asks for Playing
//! assert_eq!(app.world().resource::<State<Game>>().unwrap().get(), &Game::Menu);
//! app.update(); // the transition
//! assert_eq!(app.world().resource::<State<Game>>().unwrap().get(), &Game::Playing);
//! assert_eq!(app.world().resource::<Log>().unwrap().0, ["leave menu", "play"]);
//! ```

use std::fmt::Debug;
use std::hash::Hash;
use std::ops::Deref;

use super::schedules::ScheduleLabel;
use crate::storage::entity::Entity;
use crate::system::{Events, Res};
use crate::world::World;

/// A state type: implement it (no methods) for an enum deriving `Debug`,
/// `Clone`, `PartialEq`, `Eq` and `Hash` (and `Default` for
/// [`App::init_state`](super::App::init_state)).
pub trait States: Debug + Clone + Eq + Hash + Send + Sync + 'static {}

/// The current state of type `S` (a resource; changed only by
/// transitions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State<S: States>(pub(crate) S);

impl<S: States> State<S> {
    /// The current state.
    pub fn get(&self) -> &S {
        &self.0
    }
}

impl<S: States> Deref for State<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S: States> PartialEq<S> for State<S> {
    fn eq(&self, other: &S) -> bool {
        self.0 == *other
    }
}

/// A requested change of state `S` (a resource), applied at the next
/// transition point (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NextState<S: States> {
    /// Nothing requested.
    #[default]
    Unchanged,
    /// Change to this state.
    Pending(S),
}

impl<S: States> NextState<S> {
    /// Requests a change to `state` (the latest request wins).
    pub fn set(&mut self, state: S) {
        *self = NextState::Pending(state);
    }

    /// Withdraws the request.
    pub fn reset(&mut self) {
        *self = NextState::Unchanged;
    }
}

/// The schedule run when state `S` is entered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OnEnter<S: States>(pub S);

/// The schedule run when state `S` is left.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OnExit<S: States>(pub S);

/// The schedule run between [`OnExit`] and [`OnEnter`] of one transition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OnTransition<S: States> {
    /// The state left.
    pub from: S,
    /// The state entered.
    pub to: S,
}

impl<S: States> ScheduleLabel for OnEnter<S> {}
impl<S: States> ScheduleLabel for OnExit<S> {}
impl<S: States> ScheduleLabel for OnTransition<S> {}

/// Sent (as an event) at each transition of `S`, the initial entry
/// included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateTransitionEvent<S: States> {
    /// The state left (`None` for the initial entry).
    pub exited: Option<S>,
    /// The state entered.
    pub entered: S,
}

/// Marks an entity to despawn when state `S` leaves this value (after
/// [`OnExit`] ran), disabled or not. Only the entity itself is despawned,
/// not entities that refer to it.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
/// enum Screen {
///     #[default]
///     Title,
///     Game,
/// }
/// impl States for Screen {}
/// #[derive(Component)]
/// struct Label(&'static str);
///
/// let mut app = App::new();
/// app.init_state::<Screen>().add_systems(OnEnter(Screen::Title), |mut commands: Commands| {
///     commands.spawn((Label("press start"), StateScoped(Screen::Title)));
/// });
/// app.update();
/// assert_eq!(app.world().len(), 1);
/// app.world_mut().resource_mut::<NextState<Screen>>().unwrap().set(Screen::Game);
/// app.update();
/// assert_eq!(app.world().len(), 0);
/// ```
#[derive(crate::Component, Debug, Clone, PartialEq, Eq, Hash)]
pub struct StateScoped<S: States>(pub S);

/// A run condition: true while state `S` is `state` (false while `S` is not
/// initialized).
pub fn in_state<S: States>(state: S) -> impl FnMut(Option<Res<State<S>>>) -> bool + Clone {
    move |current: Option<Res<State<S>>>| current.is_some_and(|c| c.0 == state)
}

/// A run condition: true when state `S` changed since the condition last
/// ran (the initial entry counts).
pub fn state_changed<S: States>(current: Option<Res<State<S>>>) -> bool {
    current.is_some_and(|c| c.is_changed())
}

/// The exclusive system that applies transitions of `S` (one per state
/// type, in [`StateTransition`](super::StateTransition)).
pub(crate) fn transition_system<S: States>() -> impl FnMut(&mut World) + Send + Sync + 'static {
    let mut entered = false;
    move |world: &mut World| {
        if !entered {
            entered = true;
            let Some(initial) = world.resource::<State<S>>().map(|s| s.0.clone()) else { return };
            send(world, StateTransitionEvent { exited: None, entered: initial.clone() });
            run(world, OnEnter(initial));
        }
        let next = match world.resource_mut::<NextState<S>>() {
            Some(next) => match std::mem::take(next) {
                NextState::Pending(s) => s,
                NextState::Unchanged => return,
            },
            None => return,
        };
        let Some(state) = world.resource_mut::<State<S>>() else { return };
        if state.0 == next {
            return;
        }
        let exited = std::mem::replace(&mut state.0, next.clone());
        send(world, StateTransitionEvent { exited: Some(exited.clone()), entered: next.clone() });
        run(world, OnExit(exited.clone()));
        despawn_scoped(world, &exited);
        run(world, OnTransition { from: exited, to: next.clone() });
        run(world, OnEnter(next));
    }
}

fn send<S: States>(world: &mut World, event: StateTransitionEvent<S>) {
    if let Some(events) = world.resource_mut::<Events<StateTransitionEvent<S>>>() {
        events.send(event);
    }
}

/// Runs a transition schedule if it exists. The app builds every schedule
/// before a frame, so only one added during the frame can fail here.
fn run(world: &mut World, label: impl ScheduleLabel) {
    let label = label.intern();
    if let Err(error) = world.run_schedule_if_present(&label) {
        panic!("state transition schedule {label:?}: {error}");
    }
}

fn despawn_scoped<S: States>(world: &mut World, exited: &S) {
    // Disabled (pooled) entities belong to their state too.
    let mut query = world.query_filtered::<(Entity, &StateScoped<S>), crate::query::Allow<crate::query::Disabled>>();
    let doomed: Vec<Entity> = query.iter(world).filter(|(_, scope)| scope.0 == *exited).map(|(e, _)| e).collect();
    for entity in doomed {
        // An entity despawned by an earlier one's hooks is already gone.
        let _ = world.despawn(entity);
    }
}
