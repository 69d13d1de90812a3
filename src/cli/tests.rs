use super::{Cli, Command};
use clap::Parser;

fn serve(args: &[&str]) -> super::ServeArgs {
    let cli = Cli::try_parse_from([&["fencewatch", "serve"], args].concat()).unwrap();
    match cli.command {
        Command::Serve(args) => *args,
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn http_leaves_a_core_to_the_write_path_on_either_backend() {
    let sqlite = serve(&["--database", "sqlite://x.db"]);
    assert_eq!(sqlite.http_workers(1), 1);
    assert_eq!(sqlite.http_workers(2), 1);
    assert_eq!(sqlite.http_workers(8), 7);
    let postgres = serve(&["--database", "postgres://u@h/db"]);
    assert_eq!(postgres.http_workers(2), 1);
    assert_eq!(postgres.http_workers(8), 7);
    let told = serve(&["--database", "sqlite://x.db", "--http-workers", "4"]);
    assert_eq!(told.http_workers(2), 4);
    assert!(Cli::try_parse_from(["fencewatch", "serve", "--http-workers", "0"]).is_err());
}

#[test]
fn no_argument_shows_its_environment_value() {
    fn check(command: &clap::Command, seen: &mut usize) {
        for arg in command.get_arguments() {
            if arg.get_env().is_some() {
                assert!(
                    arg.is_hide_env_values_set(),
                    "{} --{:?}",
                    command.get_name(),
                    arg.get_long()
                );
                *seen += 1;
            }
        }
        for sub in command.get_subcommands() {
            check(sub, seen);
        }
    }
    let mut command = Cli::command_without_secrets();
    command.build();
    let mut seen = 0;
    check(&command, &mut seen);
    assert!(
        seen >= 10,
        "found only {seen} arguments read from the environment"
    );
}

#[test]
fn the_body_read_timeout_keeps_its_old_name_as_an_alias() {
    use std::time::Duration;
    assert_eq!(serve(&[]).body_read_timeout, Duration::from_secs(10));
    assert_eq!(
        serve(&["--body-read-timeout", "3s"]).body_read_timeout,
        Duration::from_secs(3)
    );
    assert_eq!(
        serve(&["--body-timeout", "2s"]).body_read_timeout,
        Duration::from_secs(2)
    );
    let hosts = serve(&["--allowed-host", "a.example", "--allowed-host", "b"]).allowed_hosts;
    assert_eq!(hosts, ["a.example", "b"]);
}
