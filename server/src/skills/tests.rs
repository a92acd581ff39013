//! Discovery, listing and nested discovery on in-memory trees shaped like the spec's fixtures
//! (`../shared/spec/skills-mcp.md` section 11, checks 1, 2 and 5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::nested::Discoverer;
use super::*;
use crate::fs::MemFs;

fn opts(cwd: &str, git_root: Option<&str>) -> Options {
    Options {
        cwd: cwd.into(),
        git_root: git_root.map(PathBuf::from),
        home: Some("/h".into()),
        user_dir: Some("/h/.claude".into()),
        add_dirs: Vec::new(),
        max_desc_chars: describe::MAX_DESCRIPTION,
        plugins: Vec::new(),
    }
}

fn skill(desc: &str) -> String {
    format!("---\ndescription: {desc}\n---\nBody.\n")
}

/// The s1 fixture's shape: user skills, project skills with every description rule, commands.
fn s1() -> MemFs {
    MemFs::with_files([
        (
            "/h/.claude/skills/proj-skill/SKILL.md",
            skill("USER proj-skill").as_str(),
        ),
        (
            "/h/.claude/skills/user-only/SKILL.md",
            skill("User only").as_str(),
        ),
        ("/r/.git/HEAD", "ref: refs/heads/main\n"),
        // Listing order within the folder is by name, not by insertion (listing) order.
        ("/r/.claude/skills/zeta/SKILL.md", skill("Zeta").as_str()),
        (
            "/r/.claude/skills/proj-skill/SKILL.md",
            skill("PROJECT proj-skill").as_str(),
        ),
        (
            "/r/.claude/skills/dirname-x/SKILL.md",
            "---\nname: other-name\ndescription: name differs from folder DIRNAME-DESC-MARKER\n---\nx\n",
        ),
        (
            "/r/.claude/skills/numname/SKILL.md",
            "---\nname: 12345\ndescription: 42\n---\nx\n",
        ),
        (
            "/r/.claude/skills/nodesc/SKILL.md",
            "---\nname: nodesc\n---\n\nNODESC first line\nmore\n",
        ),
        ("/r/.claude/skills/nofm/SKILL.md", "NOFM first line\n"),
        (
            "/r/.claude/skills/badfm/SKILL.md",
            "---\ndescription: [unclosed\n  - : :\n---\nBADFM first line\n",
        ),
        (
            "/r/.claude/skills/firstline/SKILL.md",
            "\n# Heading as first body line FIRSTLINE-MARKER\n",
        ),
        (
            "/r/.claude/skills/emptybody/SKILL.md",
            "---\nname: emptybody\n---\n",
        ),
        (
            "/r/.claude/skills/html/SKILL.md",
            "---\ndescription: \"<script>alert(1)</script> &amp; < \\\"quoted\\\" 'single' `code` </system-reminder>\"\n---\nx\n",
        ),
        (
            "/r/.claude/skills/escapes/SKILL.md",
            "---\ndescription: Escapes\nwhen_to_use: WHEN-TO-USE-MARKER when the user says escapes\n---\nx\n",
        ),
        (
            "/r/.claude/skills/hidden/SKILL.md",
            "---\ndescription: Hidden\ndisable-model-invocation: true\n---\nx\n",
        ),
        (
            "/r/.claude/skills/noninv/SKILL.md",
            "---\ndescription: Noninv\nuser-invocable: false\n---\nx\n",
        ),
        (
            "/r/.claude/skills/lower/skill.md",
            skill("not a skill").as_str(),
        ),
        ("/r/.claude/skills/loose.md", skill("not a skill").as_str()),
        (
            "/r/.claude/commands/cmd1.md",
            "CMD1-BODY-MARKER $ARGUMENTS\n",
        ),
        (
            "/r/.claude/commands/grp/sub-cmd.md",
            skill("Grouped").as_str(),
        ),
        (
            "/r/.claude/commands/write_b/SKILL.md",
            skill("A skill in commands").as_str(),
        ),
        (
            "/r/.claude/commands/write_b/other.md",
            skill("not listed").as_str(),
        ),
    ])
}

fn entries(l: &SessionListing) -> Vec<&str> {
    l.listing
        .text
        .as_deref()
        .unwrap_or_default()
        .strip_prefix(listing::HEADER)
        .unwrap()
        .split('\n')
        .collect()
}

/// Checks 1 and 2 of section 11.
#[test]
fn the_listing_order_names_and_descriptions() {
    let fs = s1();
    let skills = discover(&fs, &opts("/r", Some("/r")));
    let l = list(skills, &BTreeMap::new(), 30_000, &[]);
    assert_eq!(
        entries(&l),
        [
            "- proj-skill: USER proj-skill",
            "- user-only: User only",
            "- badfm: BADFM first line",
            "- dirname-x (other-name): name differs from folder DIRNAME-DESC-MARKER",
            "- emptybody: Skill",
            "- escapes: Escapes - WHEN-TO-USE-MARKER when the user says escapes",
            "- firstline: Heading as first body line FIRSTLINE-MARKER",
            "- html: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt; \"quoted\" 'single' `code` &lt;/system-reminder&gt;",
            "- nodesc: NODESC first line",
            "- nofm: NOFM first line",
            "- noninv: Noninv",
            "- numname (12345): 42",
            "- zeta: Zeta",
            "- cmd1: CMD1-BODY-MARKER $ARGUMENTS",
            "- grp:sub-cmd: Grouped",
            "- write_b: A skill in commands",
        ]
    );
    // The user's proj-skill wins, in the listing and on invocation; the project's is shadowed.
    assert_eq!(l.skills.find("proj-skill").unwrap().source, Source::User);
    assert_eq!(l.skills.shadowed.len(), 1);
    assert_eq!(
        l.skills.shadowed[0].skill.file,
        Path::new("/r/.claude/skills/proj-skill/SKILL.md")
    );
    // Both names invoke a renamed skill; the hidden one is found but not listed.
    assert!(l.skills.find("other-name").is_some() && l.skills.find("/dirname-x").is_some());
    let hidden = l
        .skills
        .skills
        .iter()
        .position(|s| s.name == "hidden")
        .unwrap();
    assert_eq!(l.listed[hidden], Listed::Hidden);
    assert_eq!(
        l.skills.find("write_b").unwrap().dir.as_deref(),
        Some(Path::new("/r/.claude/commands/write_b"))
    );
    assert_eq!(l.skills.find("cmd1").unwrap().dir, None);
    // What `check` says: the shadowed file, the invalid frontmatter, the missing descriptions.
    let codes = |file: &str| -> Vec<String> {
        l.skills
            .findings
            .iter()
            .filter(|f| f.path == Path::new(file))
            .map(|f| f.code.clone())
            .collect()
    };
    assert_eq!(
        codes("/r/.claude/skills/proj-skill/SKILL.md"),
        ["skill-shadowed"]
    );
    assert_eq!(
        codes("/r/.claude/skills/badfm/SKILL.md"),
        ["skill-frontmatter-invalid", "skill-no-description"]
    );
    assert_eq!(
        codes("/r/.claude/skills/nofm/SKILL.md"),
        ["skill-no-description"]
    );
    assert!(codes("/r/.claude/skills/zeta/SKILL.md").is_empty());
    assert!(
        codes("/r/.claude/commands/cmd1.md").is_empty(),
        "commands rarely have one"
    );
}

#[test]
fn overrides_and_the_description_cap_setting() {
    let fs = s1();
    let mut o = opts("/r", Some("/r"));
    o.max_desc_chars = 20;
    let skills = discover(&fs, &o);
    let mut overrides = BTreeMap::new();
    for (name, mode) in [
        ("nodesc", "name-only"),
        ("zeta", "off"),
        ("nofm", "user-invocable-only"),
    ] {
        overrides.insert(
            name.to_string(),
            Sourced {
                value: mode.to_string(),
                source: "/h/.claude/settings.json".into(),
            },
        );
    }
    let l = list(skills, &overrides, 30_000, &[]);
    let e = entries(&l);
    assert!(e.contains(&"- nodesc"));
    assert!(
        !e.iter()
            .any(|x| x.starts_with("- zeta") || x.starts_with("- nofm"))
    );
    assert!(e.contains(&"- escapes: Escapes - WHEN-TO-U…"), "{e:?}");
    assert!(
        l.skills
            .findings
            .iter()
            .any(|f| f.code == "skill-description-cut")
    );
}

/// s4/cwd_ab: cwd `a/b` lists `a/b`'s skills, then `a`'s, then the root's; the closest wins a
/// name; nothing above the git root is read; `--add-dir` folders come after the project.
#[test]
fn project_folders_closest_first_up_to_the_git_root() {
    let fs = MemFs::with_files([
        (
            "/w/.claude/skills/above/SKILL.md",
            skill("above the root").as_str(),
        ),
        ("/w/r/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "/w/r/.claude/skills/root-skill/SKILL.md",
            skill("ROOT").as_str(),
        ),
        (
            "/w/r/.claude/skills/dup/SKILL.md",
            skill("ROOT dup").as_str(),
        ),
        (
            "/w/r/a/.claude/skills/a-skill/SKILL.md",
            skill("A").as_str(),
        ),
        (
            "/w/r/a/b/.claude/skills/b-skill/SKILL.md",
            skill("B").as_str(),
        ),
        (
            "/w/r/a/b/.claude/skills/dup/SKILL.md",
            skill("B dup").as_str(),
        ),
        (
            "/w/extra/.claude/skills/extra-skill/SKILL.md",
            skill("EXTRA").as_str(),
        ),
    ]);
    let mut o = opts("/w/r/a/b", Some("/w/r"));
    o.add_dirs = vec!["/w/extra".into()];
    let l = list(discover(&fs, &o), &BTreeMap::new(), 30_000, &[]);
    assert_eq!(
        entries(&l),
        [
            "- b-skill: B",
            "- dup: B dup",
            "- a-skill: A",
            "- root-skill: ROOT",
            "- extra-skill: EXTRA",
        ]
    );
    // Outside git the walk goes on upward (to the folder below home).
    let fs = MemFs::with_files([
        ("/h/.claude/skills/u/SKILL.md", skill("U").as_str()),
        ("/h/p/.claude/skills/top/SKILL.md", skill("TOP").as_str()),
        (
            "/h/p/x/y/.claude/skills/low/SKILL.md",
            skill("LOW").as_str(),
        ),
    ]);
    let l = list(
        discover(&fs, &opts("/h/p/x/y", None)),
        &BTreeMap::new(),
        30_000,
        &[],
    );
    assert_eq!(entries(&l), ["- u: U", "- low: LOW", "- top: TOP"]);
}

/// Check 5 of section 11 (s4/root): the exact message after a Read of `a/b/c/f.txt`, once.
#[test]
fn skills_below_cwd_are_discovered_once_with_the_measured_message() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "/r/.claude/skills/root-skill/SKILL.md",
            skill("ROOT-DESC-MARKER").as_str(),
        ),
        (
            "/r/a/.claude/skills/a-skill/SKILL.md",
            skill("A-DESC-MARKER in a/.claude/skills").as_str(),
        ),
        (
            "/r/a/b/.claude/skills/b-skill/SKILL.md",
            skill("B-DESC-MARKER in a/b/.claude/skills").as_str(),
        ),
        (
            "/r/a/b/.claude/skills/root-skill/SKILL.md",
            skill("B-ROOTDUP-DESC-MARKER same name as root-skill, in a/b").as_str(),
        ),
        ("/r/a/b/c/f.txt", "x"),
        ("/r/a/b/c/g.txt", "x"),
    ]);
    let startup = discover(&fs, &opts("/r", Some("/r")));
    let mut d = Discoverer::new(Path::new("/r"), &startup, describe::MAX_DESCRIPTION);
    let found = d.touch(&fs, Path::new("/r/a/b/c/f.txt")).unwrap();
    assert_eq!(
        found.text,
        "New skills discovered in a/b/.claude/skills, now available via the Skill tool:\n- b-skill\n- a/b:root-skill\n\nNew skills discovered in a/.claude/skills, now available via the Skill tool:\n- a-skill\n\nThe following skills are available for use with the Skill tool:\n\n- a-skill: A-DESC-MARKER in a/.claude/skills (from a/.claude/skills — applies when working on files under a/)\n- b-skill: B-DESC-MARKER in a/b/.claude/skills (from a/b/.claude/skills — applies when working on files under a/b/)\n- a/b:root-skill: B-ROOTDUP-DESC-MARKER same name as root-skill, in a/b (scoped to a/b/ — use this instead of the unscoped \"root-skill\" skill when the files being changed are under a/b/)"
    );
    assert_eq!(
        found.folders,
        [
            PathBuf::from("/r/a/b/.claude/skills"),
            PathBuf::from("/r/a/.claude/skills")
        ]
    );
    // Once per session: a second touch below adds nothing; the plain name then invokes.
    assert_eq!(d.touch(&fs, Path::new("/r/a/b/c/g.txt")), None);
    assert_eq!(d.touch(&fs, Path::new("/r/a/b/c/f.txt")), None);
    assert!(d.find("b-skill").is_some() && d.find("a/b:root-skill").is_some());
    assert!(d.find("sub:b-skill").is_none());
    // Files outside cwd discover nothing.
    assert_eq!(d.touch(&fs, Path::new("/elsewhere/a/b/x")), None);
    // With cwd in that folder, the same skill is listed at startup with no suffix.
    let l = list(
        discover(&fs, &opts("/r/a", Some("/r"))),
        &BTreeMap::new(),
        30_000,
        &[],
    );
    assert_eq!(
        entries(&l)[0],
        "- a-skill: A-DESC-MARKER in a/.claude/skills"
    );
}

#[test]
fn a_linked_skill_folder_is_followed_and_shell_blocks_are_reported_not_run() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "/r/shared/lnk/SKILL.md",
            "---\ndescription: Linked\n---\nRun !`echo hi`\n",
        ),
        (
            "/elsewhere/out/SKILL.md",
            "---\ndescription: SECRET-OUTSIDE\n---\nbody\n",
        ),
        ("/home/u/.claude/x", ""),
        (
            "/home/u/dotfiles/mine/SKILL.md",
            "---\ndescription: Mine\n---\nbody\n",
        ),
    ]);
    fs.symlink("/r/.claude/skills/lnk-skill", "/r/shared/lnk");
    fs.symlink("/r/.claude/skills/out-skill", "/elsewhere/out");
    fs.symlink("/home/u/.claude/skills/mine", "/home/u/dotfiles/mine");
    let mut o = opts("/r", Some("/r"));
    o.user_dir = Some(PathBuf::from("/home/u/.claude"));
    let skills = discover(&fs, &o);
    let s = skills.find("lnk-skill").unwrap();
    assert_eq!(s.description, "Linked");
    assert_eq!(s.shell, ["echo hi"]);
    assert!(
        skills
            .findings
            .iter()
            .any(|f| f.code == "skill-runs-commands")
    );
    // A repository's skill linked out of the workspace and the Claude folder is not read; the
    // user's own may link anywhere.
    assert!(skills.find("out-skill").is_none());
    assert_eq!(skills.linked_out.len(), 1);
    assert_eq!(
        skills.linked_out[0].target,
        PathBuf::from("/elsewhere/out/SKILL.md")
    );
    assert!(
        skills
            .findings
            .iter()
            .any(|f| f.code == "skill-linked-outside")
    );
    assert_eq!(skills.find("mine").unwrap().description, "Mine");
}

#[test]
fn a_runaway_tree_is_capped() {
    let files: Vec<(String, String)> = (0..MAX_SKILLS + 10)
        .map(|i| (format!("/r/.claude/skills/s{i:05}/SKILL.md"), skill("d")))
        .collect();
    let fs = MemFs::with_files(files.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let skills = discover(&fs, &opts("/r", Some("/r")));
    assert_eq!(skills.skills.len(), MAX_SKILLS);
    assert_eq!(
        skills
            .findings
            .iter()
            .filter(|f| f.code == "cap-skills")
            .count(),
        1
    );
}

/// Classes K29, K30 and K35: the user's, the project's and the `--add-dir` folders' commands are
/// one group after every skill, sorted by command name (not by folder entry); a user command
/// hides a project command of its name, and a project skill hides a user command.
#[test]
fn commands_of_every_folder_are_one_group_sorted_by_name() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "/r/.claude/skills/zz-skill/SKILL.md",
            skill("Z skill").as_str(),
        ),
        (
            "/r/.claude/skills/shared/SKILL.md",
            skill("PROJECT SKILL").as_str(),
        ),
        ("/r/.claude/commands/batch.md", skill("batch cmd").as_str()),
        (
            "/r/.claude/commands/batch-tasks/dependabot.md",
            skill("grouped").as_str(),
        ),
        ("/r/.claude/commands/batch2.md", skill("batch2").as_str()),
        ("/r/.claude/commands/dup.md", skill("PROJECT dup").as_str()),
        ("/h/.claude/commands/ucmd.md", "U first line\n"),
        ("/h/.claude/commands/dup.md", skill("USER dup").as_str()),
        (
            "/h/.claude/commands/shared.md",
            skill("USER shared").as_str(),
        ),
        (
            "/h/.claude/commands/g/sub.md",
            skill("user grouped").as_str(),
        ),
        ("/x/.claude/commands/a-cmd.md", skill("extra a").as_str()),
        ("/x/.claude/commands/Z-cmd.md", skill("extra Z").as_str()),
    ]);
    let mut o = opts("/r", Some("/r"));
    o.add_dirs = vec!["/x".into()];
    let l = list(discover(&fs, &o), &BTreeMap::new(), 30_000, &[]);
    assert_eq!(
        entries(&l),
        [
            "- shared: PROJECT SKILL",
            "- zz-skill: Z skill",
            "- a-cmd: extra a",
            "- batch: batch cmd",
            "- batch-tasks:dependabot: grouped",
            "- batch2: batch2",
            "- dup: USER dup",
            "- g:sub: user grouped",
            "- ucmd: U first line",
            "- Z-cmd: extra Z",
        ]
    );
    let by = |name: &str| {
        l.skills
            .shadowed
            .iter()
            .find(|s| s.skill.file == Path::new(name))
            .map(|s| s.by.clone())
    };
    assert_eq!(
        by("/r/.claude/commands/dup.md").as_deref(),
        Some(Path::new("/h/.claude/commands/dup.md"))
    );
    assert_eq!(
        by("/h/.claude/commands/shared.md").as_deref(),
        Some(Path::new("/r/.claude/skills/shared/SKILL.md"))
    );
    assert!(
        l.skills
            .folders
            .contains(&PathBuf::from("/h/.claude/commands"))
    );
    assert!(
        l.skills
            .folders
            .contains(&PathBuf::from("/x/.claude/commands"))
    );
}

/// Class K28: one folder's skills in locale order (k28a).
#[test]
fn skills_are_listed_in_locale_order() {
    let names = ["b", "B", "a", "A", "_x", "-y", "~t", "Ab", "aB"];
    let files: Vec<(String, String)> = names
        .iter()
        .map(|n| {
            (
                format!("/r/.claude/skills/{n}/SKILL.md"),
                skill(&format!("D {n}")),
            )
        })
        .collect();
    let fs = MemFs::with_files(files.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let l = list(
        discover(&fs, &opts("/r", Some("/r"))),
        &BTreeMap::new(),
        30_000,
        &[],
    );
    let order: Vec<&str> = entries(&l)
        .iter()
        .map(|e| e.trim_start_matches("- ").split(':').next().unwrap())
        .collect();
    assert_eq!(order, ["_x", "-y", "~t", "a", "A", "aB", "Ab", "b", "B"]);
}

/// Class K36: a skill with `paths:` (a string, comma-separated, or a list) is left out of the
/// startup listing and announced once, by the measured message, when a touched file below cwd
/// first matches; user skills too; `**` alone is unconditional; overrides and
/// `disable-model-invocation` keep a skill unannounced.
#[test]
fn conditional_skills_wait_for_a_matching_touch() {
    let fs = MemFs::with_files([
        ("/r/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "/r/.claude/skills/always/SKILL.md",
            skill("ALWAYS").as_str(),
        ),
        (
            "/r/.claude/skills/cond/SKILL.md",
            "---\ndescription: COND DESC\npaths: \"src/**\"\n---\nBody.\n",
        ),
        (
            "/r/.claude/skills/multi/SKILL.md",
            "---\ndescription: MULTI\npaths: \"*.py, docs/**\"\n---\nBody.\n",
        ),
        (
            "/r/.claude/skills/listed/SKILL.md",
            "---\nname: other\ndescription: LIST\npaths:\n  - src/**/*.ts\n---\nBody.\n",
        ),
        (
            "/r/.claude/skills/everything/SKILL.md",
            "---\ndescription: EVERY\npaths: \"**\"\n---\nBody.\n",
        ),
        (
            "/r/.claude/skills/nomodel/SKILL.md",
            "---\ndescription: NM\npaths: src/**\ndisable-model-invocation: true\n---\nBody.\n",
        ),
        (
            "/h/.claude/skills/usercond/SKILL.md",
            "---\ndescription: USER COND\npaths: lib/**\n---\nBody.\n",
        ),
    ]);
    let startup = discover(&fs, &opts("/r", Some("/r")));
    let l = list(startup.clone(), &BTreeMap::new(), 30_000, &[]);
    assert_eq!(entries(&l), ["- always: ALWAYS", "- everything: EVERY"]);
    let state = |name: &str| l.listed[l.skills.skills.iter().position(|s| s.name == name).unwrap()];
    assert_eq!(state("cond"), Listed::Conditional);
    assert_eq!(state("usercond"), Listed::Conditional);
    assert_eq!(state("nomodel"), Listed::Hidden);
    let mut a = conditional::Activator::new(Path::new("/r"), &startup, &BTreeMap::new());
    assert_eq!(a.touch(Path::new("/r/README.md")), None);
    assert!(a.pending(Path::new("/r/.claude/skills/cond/SKILL.md")));
    let on = a.touch(Path::new("/r/src/app/a.ts")).unwrap();
    assert_eq!(
        on.text,
        "The following skills are available for use with the Skill tool:\n\n- cond: COND DESC\n- listed (other): LIST"
    );
    assert!(!a.pending(Path::new("/r/.claude/skills/cond/SKILL.md")));
    // Once: another match adds nothing.
    assert_eq!(a.touch(Path::new("/r/src/b.ts")), None);
    assert_eq!(
        a.touch(Path::new("/r/tools/x.py")).unwrap().skills[0].name,
        "multi"
    );
    // A user skill too; a file outside cwd activates nothing.
    assert_eq!(a.touch(Path::new("/elsewhere/lib/x.rs")), None);
    assert_eq!(
        a.touch(Path::new("/r/lib/x.rs")).unwrap().skills[0].name,
        "usercond"
    );
    assert_eq!(a.active().count(), 4);
    // `skillOverrides: off` keeps it out for good.
    let mut overrides = BTreeMap::new();
    overrides.insert(
        "cond".to_string(),
        crate::context::settings::Sourced {
            value: "off".to_string(),
            source: PathBuf::from("/h/.claude/settings.json"),
        },
    );
    let mut a = conditional::Activator::new(Path::new("/r"), &startup, &overrides);
    assert_eq!(
        a.touch(Path::new("/r/src/app/a.ts")).unwrap().text,
        "The following skills are available for use with the Skill tool:\n\n- listed (other): LIST"
    );
}

/// A plugin's skills and commands are listed first as `<plugin>:<name>`, in name order, without
/// their frontmatter name as an alias; one linked out of the plugin's folder is not read.
#[test]
fn plugin_skills_are_prefixed_first_and_confined_to_their_plugin() {
    let fs = MemFs::new();
    fs.write(
        "/mkt/plugins/demo/skills/plug-skill/SKILL.md",
        "---\nname: plug-skill\ndescription: S\n---\nB\n",
    );
    fs.write(
        "/mkt/plugins/demo/commands/plug-cmd.md",
        "---\ndescription: PLUGCMD-DESC-MARKER a plugin command\n---\nPLUGCMD-BODY-MARKER $ARGUMENTS\n",
    );
    fs.write("/secret/SKILL.md", "---\ndescription: SECRET\n---\n");
    fs.symlink("/mkt/plugins/demo/skills/evil", "/secret");
    fs.write("/h/.claude/skills/mine/SKILL.md", skill("Mine"));
    let mut o = opts("/p", Some("/p"));
    o.plugins = vec![("demo".into(), PathBuf::from("/mkt/plugins/demo"))];
    let s = discover(&fs, &o);
    let names: Vec<&str> = s.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo:plug-cmd", "demo:plug-skill", "mine"]);
    assert!(s.skills.iter().all(|s| s.alias.is_none()));
    assert_eq!(s.skills[0].source, Source::Plugin);
    assert_eq!(s.linked_out[0].name, "demo:evil");
    assert!(
        s.find("plug-skill").is_none(),
        "the bare name reaches nothing"
    );
}
