//! Pong on [`App`]: two paddles played by a simple AI, a ball, and the
//! rules as states.
//!
//! The court is [`HALF_WIDTH`] x [`HALF_HEIGHT`] around the origin; the left
//! paddle guards `x = -HALF_WIDTH`, the right one `x = HALF_WIDTH`. Physics
//! runs in the app's fixed steps (`FixedUpdate`, the step read through
//! [`Time`]), so a game is the same for the same seed whatever the frame
//! rate. A [`PongState`] drives the rules:
//!
//! - [`PongState::Serve`]: on entering it the ball is put in the centre and
//!   the receiver (the side that lost the last point) draws its aim; after
//!   [`PongConfig::serve_delay`] the ball is served towards it at a seeded
//!   angle, and the state becomes [`PongState::Play`].
//! - [`PongState::Play`]: the ball moves, bounces off the walls and the
//!   paddles (the further from a paddle's centre it hits, the steeper it
//!   leaves, 5 % faster each hit); past a paddle it is a [`Goal`] event for
//!   the other side and the state becomes [`PongState::Scored`].
//! - [`PongState::Scored`]: on entering it the point is counted in
//!   [`Score`] and a [`GoalBanner`] is spawned, scoped to the state (it is
//!   despawned when the state is left); after a pause the next serve, or
//!   [`PongState::Over`] once a side has [`PongConfig::points_to_win`].
//!
//! The AI moves each paddle at most [`PongConfig::paddle_speed`] towards
//! where the ball will cross its line (walls folded in) plus an aim error
//! drawn when the ball turns towards it, so it sometimes misses; while the
//! ball goes away it drifts back to the centre.
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//! use ecs_examples::pong::{PongConfig, PongPlugin, PongState, Score};
//!
//! let mut app = App::new();
//! app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
//!     .insert_resource(Time::<Fixed>::from_hz(50.0))
//!     .add_plugins(PongPlugin::new(PongConfig { points_to_win: 3, ..PongConfig::default() }));
//! for _ in 0..100_000 {
//!     app.update();
//!     if app.world().resource::<State<PongState>>().unwrap().get() == &PongState::Over {
//!         break;
//!     }
//! }
//! let score = app.world().resource::<Score>().unwrap();
//! assert_eq!(score.left.max(score.right), 3);
//! ```

use std::time::Duration;

use ecs_core::prelude::*;
use glam::Vec2;

/// Half the court's width: the goal lines are at `x = +-HALF_WIDTH`.
pub const HALF_WIDTH: f32 = 20.0;
/// Half the court's height: the walls are at `y = +-HALF_HEIGHT`.
pub const HALF_HEIGHT: f32 = 12.0;
/// Distance of each paddle's centre line from the court's centre.
pub const PADDLE_X: f32 = 18.0;
/// Half a paddle's height.
pub const PADDLE_HALF_HEIGHT: f32 = 2.0;
/// Half a paddle's thickness.
pub const PADDLE_HALF_WIDTH: f32 = 0.25;
/// The ball's radius.
pub const BALL_RADIUS: f32 = 0.5;
/// The fastest the ball gets, units per second.
pub const MAX_BALL_SPEED: f32 = 32.0;

/// The game's numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PongConfig {
    /// Points that win the game (at least 1).
    pub points_to_win: u32,
    /// The ball's speed when served, units per second.
    pub serve_speed: f32,
    /// The paddles' top speed, units per second.
    pub paddle_speed: f32,
    /// The largest aim error of the AI, units (up to it, uniformly).
    pub aim_error: f32,
    /// Seconds between entering [`PongState::Serve`] and the serve.
    pub serve_delay: f32,
    /// Seconds between a goal and the next serve.
    pub score_pause: f32,
    /// Seed of the serve angles and the aim errors.
    pub seed: u64,
}

impl Default for PongConfig {
    fn default() -> Self {
        PongConfig {
            points_to_win: 5,
            serve_speed: 16.0,
            paddle_speed: 12.0,
            aim_error: 3.2,
            serve_delay: 0.5,
            score_pause: 0.75,
            seed: 0x50_4E_47,
        }
    }
}

/// A side of the court.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Guards `x = -HALF_WIDTH`.
    Left,
    /// Guards `x = +HALF_WIDTH`.
    Right,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }

    /// `-1.0` for the left side, `1.0` for the right.
    pub fn sign(self) -> f32 {
        match self {
            Side::Left => -1.0,
            Side::Right => 1.0,
        }
    }
}

/// The rules' state (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PongState {
    /// The ball waits in the centre.
    #[default]
    Serve,
    /// The ball is in play.
    Play,
    /// A point was scored: a pause.
    Scored,
    /// A side has won.
    Over,
}

impl States for PongState {}

/// A paddle: its side and where the AI aims, relative to where the ball
/// will cross its line.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Paddle {
    /// The side it guards.
    pub side: Side,
    /// The AI's aim error for the ball coming at it now.
    pub aim: f32,
}

/// Marks the ball.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ball;

/// Where a paddle or the ball is (its centre).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Pos(pub Vec2);

/// The ball's velocity, units per second.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Vel(pub Vec2);

/// Shown while [`PongState::Scored`] lasts (scoped to it).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoalBanner {
    /// Who scored.
    pub scorer: Side,
}

/// The score, a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Score {
    /// The left side's points.
    pub left: u32,
    /// The right side's points.
    pub right: u32,
    /// Paddle hits in the game.
    pub hits: u32,
    /// The winner, once [`PongState::Over`].
    pub winner: Option<Side>,
}

impl Score {
    /// The points of `side`.
    pub fn of(&self, side: Side) -> u32 {
        match side {
            Side::Left => self.left,
            Side::Right => self.right,
        }
    }
}

/// Sent when the ball passes a paddle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Goal {
    /// The side that scored.
    pub scorer: Side,
}

/// The game's settings, timers and random state, a resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// The configuration.
    pub config: PongConfig,
    /// Counts down the serve delay, then the pause after a goal.
    pub timer: Timer,
    /// The side the next serve goes to.
    pub receiver: Side,
    rng: u64,
}

impl Rules {
    /// SplitMix64: uniform in `[-1, 1)`.
    fn signed(&mut self) -> f32 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Adds pong to an [`App`]: the state, the resources, the paddles and the
/// ball (spawned at `Startup`) and the systems (see the [module docs](self)).
/// The app's fixed step is the physics step; set the clock as you like.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PongPlugin {
    config: PongConfig,
}

impl PongPlugin {
    /// Pong with `config` (points to win at least 1).
    pub fn new(config: PongConfig) -> Self {
        PongPlugin { config: PongConfig { points_to_win: config.points_to_win.max(1), ..config } }
    }
}

impl Plugin for PongPlugin {
    fn build(&self, app: &mut App) {
        let config = self.config;
        app.insert_resource(Rules {
            config,
            timer: Timer::new(Duration::ZERO, TimerMode::Once),
            receiver: Side::Right,
            rng: config.seed,
        })
        .init_resource::<Score>()
        .add_event::<Goal>()
        .init_state::<PongState>()
        .add_systems(Startup, spawn_court)
        .add_systems(OnEnter(PongState::Serve), set_up_serve)
        .add_systems(OnEnter(PongState::Scored), count_point)
        .add_systems(OnEnter(PongState::Over), |mut score: ResMut<Score>| {
            score.winner = Some(if score.left > score.right { Side::Left } else { Side::Right });
        })
        .add_systems(
            FixedUpdate,
            (
                move_paddles.run_if(not(in_state(PongState::Over))),
                serve.run_if(in_state(PongState::Serve)),
                (move_ball, hit_paddles, detect_goal).chain().run_if(in_state(PongState::Play)),
                pause_after_goal.run_if(in_state(PongState::Scored)),
            )
                .chain(),
        );
    }
}

/// Spawns the two paddles and the ball.
pub fn spawn_court(mut commands: Commands) {
    for side in [Side::Left, Side::Right] {
        commands.spawn((Paddle { side, aim: 0.0 }, Pos(Vec2::new(side.sign() * PADDLE_X, 0.0))));
    }
    commands.spawn((Ball, Pos(Vec2::ZERO), Vel(Vec2::ZERO)));
}

/// On entering [`PongState::Serve`]: the ball waits in the centre, the
/// serve timer starts, the receiver draws its aim.
pub fn set_up_serve(
    mut ball: Query<(&mut Pos, &mut Vel), With<Ball>>,
    mut paddles: Query<&mut Paddle>,
    mut rules: ResMut<Rules>,
) {
    ball.for_each_mut(|(mut pos, mut vel)| {
        pos.0 = Vec2::ZERO;
        vel.0 = Vec2::ZERO;
    });
    rules.timer = Timer::from_seconds(rules.config.serve_delay, TimerMode::Once);
    let receiver = rules.receiver;
    let error = rules.config.aim_error * rules.signed();
    paddles.for_each_mut(|mut paddle| {
        if paddle.side == receiver {
            paddle.aim = error;
        }
    });
}

/// In [`PongState::Serve`]: when the delay is over, serves towards the
/// receiver at an angle of up to about 27 degrees, and starts play.
pub fn serve(
    mut ball: Query<&mut Vel, With<Ball>>,
    mut rules: ResMut<Rules>,
    time: Res<Time>,
    mut next: ResMut<NextState<PongState>>,
) {
    if !rules.timer.tick(time.delta()).just_finished() {
        return;
    }
    let direction = Vec2::new(rules.receiver.sign(), 0.5 * rules.signed()).normalize();
    let speed = rules.config.serve_speed;
    ball.for_each_mut(|mut vel| vel.0 = direction * speed);
    next.set(PongState::Play);
}

/// Where a ball at `pos` moving at `vel` crosses `x` (walls folded in), or
/// `None` if it does not move towards `x`.
pub fn predict_y(pos: Vec2, vel: Vec2, x: f32) -> Option<f32> {
    let t = (x - pos.x) / vel.x;
    if !(t.is_finite() && t >= 0.0) {
        return None;
    }
    let limit = HALF_HEIGHT - BALL_RADIUS;
    let span = 2.0 * limit;
    let m = (pos.y + vel.y * t + limit).rem_euclid(2.0 * span);
    Some(if m > span { 2.0 * span - m } else { m } - limit)
}

/// The AI: each paddle moves at most [`PongConfig::paddle_speed`] towards
/// where the ball will cross its line plus its aim error, or back to the
/// centre while the ball goes away or waits.
pub fn move_paddles(
    mut paddles: Query<(&Paddle, &mut Pos), Without<Ball>>,
    ball: Query<(&Pos, &Vel), With<Ball>>,
    rules: Res<Rules>,
    time: Res<Time>,
) {
    let mut ball = ball;
    let Some((ball_pos, ball_vel)) = ball.iter().next().map(|(p, v)| (p.0, v.0)) else { return };
    let step = rules.config.paddle_speed * time.delta_secs();
    let reach = HALF_HEIGHT - PADDLE_HALF_HEIGHT;
    paddles.for_each_mut(|(paddle, mut pos)| {
        let coming = ball_vel.x * paddle.side.sign() > 0.0;
        let target = if coming {
            predict_y(ball_pos, ball_vel, paddle.side.sign() * PADDLE_X).map_or(0.0, |y| y + paddle.aim)
        } else {
            0.0
        };
        let y = pos.0.y + (target - pos.0.y).clamp(-step, step);
        pos.set_if_neq(Pos(Vec2::new(pos.0.x, y.clamp(-reach, reach))));
    });
}

/// Moves the ball for the step and bounces it off the walls.
pub fn move_ball(mut ball: Query<(&mut Pos, &mut Vel), With<Ball>>, time: Res<Time>) {
    let dt = time.delta_secs();
    let limit = HALF_HEIGHT - BALL_RADIUS;
    ball.for_each_mut(|(mut pos, mut vel)| {
        let mut p = pos.0 + vel.0 * dt;
        if p.y > limit {
            p.y = 2.0 * limit - p.y;
            vel.0.y = -vel.0.y.abs();
        } else if p.y < -limit {
            p.y = -2.0 * limit - p.y;
            vel.0.y = vel.0.y.abs();
        }
        pos.0 = p;
    });
}

/// Bounces the ball off a paddle it crossed the face of in this step: back
/// out, 5 % faster (up to [`MAX_BALL_SPEED`]), steeper the further from the
/// paddle's centre it hit. The other paddle draws its aim for the return.
pub fn hit_paddles(
    mut ball: Query<(&mut Pos, &mut Vel), With<Ball>>,
    mut paddles: Query<(&mut Paddle, &Pos), Without<Ball>>,
    mut rules: ResMut<Rules>,
    mut score: ResMut<Score>,
    time: Res<Time>,
) {
    let dt = time.delta_secs();
    let mut hit: Option<Side> = None;
    let mut paddle_ys: Vec<(Side, f32)> = Vec::with_capacity(2);
    // Reading through `Mut` marks nothing.
    paddles.for_each_mut(|(paddle, pos)| paddle_ys.push((paddle.side, pos.0.y)));
    ball.for_each_mut(|(mut pos, mut vel)| {
        let side = if vel.0.x > 0.0 { Side::Right } else { Side::Left };
        let face = side.sign() * (PADDLE_X - PADDLE_HALF_WIDTH - BALL_RADIUS);
        let before = pos.0 - vel.0 * dt;
        // Crossed the face line in this step, moving outwards?
        if (before.x - face) * side.sign() > 0.0 || (pos.0.x - face) * side.sign() < 0.0 {
            return;
        }
        let t = (face - before.x) / (pos.0.x - before.x);
        let y_at = before.y + (pos.0.y - before.y) * t;
        let Some(&(_, paddle_y)) = paddle_ys.iter().find(|(s, _)| *s == side) else { return };
        let offset = (y_at - paddle_y) / (PADDLE_HALF_HEIGHT + BALL_RADIUS);
        if offset.abs() > 1.0 {
            return; // missed: on to the goal line
        }
        let speed = (vel.0.length() * 1.05).min(MAX_BALL_SPEED);
        let direction = Vec2::new(-side.sign(), 0.75 * offset).normalize();
        vel.0 = direction * speed;
        // Reflect the rest of the step off the face.
        pos.0.x = face - (pos.0.x - face);
        hit = Some(side);
    });
    if let Some(side) = hit {
        score.hits += 1;
        let error = rules.config.aim_error * rules.signed();
        paddles.for_each_mut(|(mut paddle, _)| {
            if paddle.side == side.other() {
                paddle.aim = error;
            }
        });
    }
}

/// A ball past a goal line is a [`Goal`] for the other side: the ball
/// stops and the state becomes [`PongState::Scored`].
pub fn detect_goal(
    mut ball: Query<(&Pos, &mut Vel), With<Ball>>,
    mut goals: EventWriter<Goal>,
    mut next: ResMut<NextState<PongState>>,
) {
    ball.for_each_mut(|(pos, mut vel)| {
        if pos.0.x.abs() > HALF_WIDTH && vel.0 != Vec2::ZERO {
            let conceded = if pos.0.x > 0.0 { Side::Right } else { Side::Left };
            vel.0 = Vec2::ZERO;
            goals.send(Goal { scorer: conceded.other() });
            next.set(PongState::Scored);
        }
    });
}

/// On entering [`PongState::Scored`]: counts the point, shows the banner
/// (scoped to the state), the side that conceded receives the next serve,
/// and the pause starts.
pub fn count_point(
    mut goals: EventReader<Goal>,
    mut score: ResMut<Score>,
    mut rules: ResMut<Rules>,
    mut commands: Commands,
) {
    for goal in goals.read() {
        match goal.scorer {
            Side::Left => score.left += 1,
            Side::Right => score.right += 1,
        }
        rules.receiver = goal.scorer.other();
        commands.spawn((GoalBanner { scorer: goal.scorer }, StateScoped(PongState::Scored)));
    }
    rules.timer = Timer::from_seconds(rules.config.score_pause, TimerMode::Once);
}

/// In [`PongState::Scored`]: after the pause, the next serve, or the end
/// of the game.
pub fn pause_after_goal(
    mut rules: ResMut<Rules>,
    score: Res<Score>,
    time: Res<Time>,
    mut next: ResMut<NextState<PongState>>,
) {
    if !rules.timer.tick(time.delta()).just_finished() {
        return;
    }
    let to_win = rules.config.points_to_win;
    next.set(if score.left >= to_win || score.right >= to_win { PongState::Over } else { PongState::Serve });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of 1/60 s, one fixed step each.
    const STEP: Duration = Duration::from_nanos(16_666_667);

    fn app(config: PongConfig) -> App {
        let mut app = App::new();
        app.insert_resource(TimeUpdateStrategy::ManualDuration(STEP))
            .insert_resource(Time::<Fixed>::from_duration(STEP))
            .add_plugins(PongPlugin::new(config));
        app
    }

    fn state(app: &App) -> PongState {
        *app.world().resource::<State<PongState>>().unwrap().get()
    }

    fn ball(app: &mut App) -> (Vec2, Vec2) {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Pos, &Vel), With<Ball>>();
        q.iter(world).map(|(p, v)| (p.0, v.0)).next().unwrap()
    }

    fn set_ball(app: &mut App, pos: Vec2, vel: Vec2) {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&mut Pos, &mut Vel), With<Ball>>();
        q.for_each_mut(world, |(mut p, mut v)| {
            p.0 = pos;
            v.0 = vel;
        });
    }

    fn paddle_y(app: &mut App, side: Side) -> f32 {
        let world = app.world_mut();
        let mut q = world.query::<(&Paddle, &Pos)>();
        q.iter(world).find(|(p, _)| p.side == side).map(|(_, p)| p.0.y).unwrap()
    }

    #[test]
    fn the_serve_waits_its_delay_then_goes_to_the_receiver() {
        let mut app = app(PongConfig { serve_delay: 0.5, ..PongConfig::default() });
        // 0.5 s at 60 steps a second: the 30th step serves; the state
        // changes at the next frame's transition.
        app.run_frames(29);
        assert_eq!(state(&app), PongState::Serve);
        assert_eq!(ball(&mut app), (Vec2::ZERO, Vec2::ZERO));
        app.run_frames(2);
        assert_eq!(state(&app), PongState::Play);
        let (_, vel) = ball(&mut app);
        assert!(vel.x > 0.0, "the first serve goes right: {vel}");
        assert!((vel.length() - 16.0).abs() < 1e-3);
    }

    #[test]
    fn the_ball_bounces_off_the_walls() {
        let mut app = app(PongConfig { serve_delay: 0.0, ..PongConfig::default() });
        app.run_frames(2);
        assert_eq!(state(&app), PongState::Play);
        let limit = HALF_HEIGHT - BALL_RADIUS;
        set_ball(&mut app, Vec2::new(0.0, limit - 0.1), Vec2::new(0.0, 12.0));
        app.update(); // 0.2 units up: 0.1 to the wall, 0.1 back
        let (pos, vel) = ball(&mut app);
        assert!((pos.y - (limit - 0.1)).abs() < 1e-3 && vel.y == -12.0, "{pos} {vel}");
    }

    #[test]
    fn a_paddle_returns_a_ball_that_reaches_it_faster_and_angled_by_the_offset() {
        let mut app = app(PongConfig { serve_delay: 0.0, ..PongConfig::default() });
        app.run_frames(2);
        let y = paddle_y(&mut app, Side::Right);
        let face = PADDLE_X - PADDLE_HALF_WIDTH - BALL_RADIUS;
        // Hits 1 unit above the paddle's centre within the next step.
        set_ball(&mut app, Vec2::new(face - 0.1, y + 1.0), Vec2::new(20.0, 0.0));
        app.update();
        let (pos, vel) = ball(&mut app);
        assert!(vel.x < 0.0 && vel.y > 0.0, "{vel}");
        assert!((vel.length() - 21.0).abs() < 1e-3, "5 % faster: {}", vel.length());
        assert!(pos.x < face, "{pos}");
        assert_eq!(app.world().resource::<Score>().unwrap().hits, 1);
    }

    #[test]
    fn a_ball_past_a_paddle_scores_then_the_loser_receives_the_serve() {
        let config = PongConfig { serve_delay: 0.0, score_pause: 0.5, ..PongConfig::default() };
        let mut app = app(config);
        app.run_frames(2);
        // Far from the left paddle, going left fast: a goal for the right.
        let y = paddle_y(&mut app, Side::Left);
        let aside = if y > 0.0 { -10.0 } else { 10.0 };
        set_ball(&mut app, Vec2::new(-HALF_WIDTH + 0.2, aside), Vec2::new(-30.0, 0.0));
        app.update(); // the goal; Scored is entered at the next frame
        assert_eq!(ball(&mut app).1, Vec2::ZERO);
        app.update();
        assert_eq!(state(&app), PongState::Scored);
        let score = *app.world().resource::<Score>().unwrap();
        assert_eq!((score.left, score.right), (0, 1));
        let world = app.world_mut();
        let banners: Vec<GoalBanner> = world.query::<&GoalBanner>().iter(world).copied().collect();
        assert_eq!(banners, [GoalBanner { scorer: Side::Right }]);
        // The pause (30 steps), then the serve: the banner is gone, and the
        // left side receives (no serve delay: served at once).
        app.run_frames(29);
        assert_eq!(state(&app), PongState::Scored);
        app.update();
        assert_eq!(state(&app), PongState::Serve);
        assert_eq!(app.world_mut().query::<&GoalBanner>().iter(app.world()).count(), 0);
        assert_eq!(app.world().resource::<Rules>().unwrap().receiver, Side::Left);
        app.update();
        assert_eq!(state(&app), PongState::Play);
        assert!(ball(&mut app).1.x < 0.0);
    }

    #[test]
    fn a_game_ends_with_a_winner_and_the_same_seed_plays_the_same_game() {
        let play = |seed| {
            let mut app = app(PongConfig { points_to_win: 3, seed, ..PongConfig::default() });
            let mut frames = 0;
            while state(&app) != PongState::Over {
                app.update();
                frames += 1;
                assert!(frames < 60 * 600, "no winner after 10 minutes");
            }
            app.run_frames(10); // Over: nothing moves any more
            (*app.world().resource::<Score>().unwrap(), frames, ball(&mut app))
        };
        let (score, frames, ball_at) = play(7);
        assert_eq!(score.left.max(score.right), 3);
        assert!(score.left.min(score.right) < 3);
        let winner = if score.left == 3 { Side::Left } else { Side::Right };
        assert_eq!(score.winner, Some(winner));
        assert!(score.hits > 0, "the AI returns some balls");
        assert_eq!(play(7), (score, frames, ball_at));
        assert_ne!(play(8).1, frames, "another seed, another game");
    }

    #[test]
    fn the_prediction_folds_the_walls() {
        let limit = HALF_HEIGHT - BALL_RADIUS;
        // Straight: no wall.
        assert_eq!(predict_y(Vec2::ZERO, Vec2::new(10.0, 0.0), 10.0), Some(0.0));
        // Up 1.5 limits: bounces off the top, ends half a limit below it.
        let y = predict_y(Vec2::ZERO, Vec2::new(10.0, 15.0 * limit / 10.0), 10.0).unwrap();
        assert!((y - 0.5 * limit).abs() < 1e-3, "{y}");
        // Going away: no crossing.
        assert_eq!(predict_y(Vec2::ZERO, Vec2::new(-1.0, 0.0), 10.0), None);
    }
}
