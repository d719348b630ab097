"""User-facing settings of jupyter-xcsh, in one Configurable."""

from __future__ import annotations

from traitlets import Bool, Dict, Enum, Float, Int, List, Unicode
from traitlets.config import Configurable

from jupyter_xcsh.fast_paths import FAST_PATHS


class XcshSettings(Configurable):
    """Every user setting of the extension (configure as ``c.XcshSettings.<name>``)."""

    read_max_chars = Int(
        20000,
        min=1000,
        config=True,
        help=(
            "Size budget, in characters, of the text returned by the notebook tool's "
            "'read' action (default 20000). When the rendered view would exceed it, the view "
            "stops at a cell boundary and ends with a notice telling the caller where to "
            "continue."
        ),
    )

    read_max_source_chars = Int(
        4000,
        min=100,
        config=True,
        help=(
            "Largest cell source, in characters, shown whole by the 'read' action "
            "(default 4000); longer sources are cut in the middle with a notice."
        ),
    )

    read_max_output_chars = Int(
        1500,
        min=100,
        config=True,
        help=(
            "Largest output summary, in characters, shown per cell by the 'read' action "
            "(default 1500); longer output text keeps its head and tail with a notice."
        ),
    )

    max_output_bytes = Int(
        8192,
        min=1024,
        config=True,
        help=(
            "Bytes (UTF-8) of one execution's output text a python call or a run in place "
            "shows the caller at most, head and tail together (default 8192 = 8 KiB; at least "
            "1024). Past "
            "this, or past output_head_lines + output_tail_lines lines, the output is cut on "
            "line boundaries, a notice first, and the full output is written to an artifact "
            "file. The server holds at most three times this per running cell."
        ),
    )

    output_head_lines = Int(
        20,
        min=0,
        config=True,
        help=(
            "Lines shown from the start of an output that is cut (default 20), within their "
            "share of max_output_bytes. 0 shows only its end; 0 here and in output_tail_lines "
            "counts no lines at all: only max_output_bytes cuts, keeping the end."
        ),
    )

    output_tail_lines = Int(
        60,
        min=0,
        config=True,
        help=(
            "Lines shown from the end of an output that is cut (default 60), within their "
            "share of max_output_bytes. 0 shows only its start (see output_head_lines)."
        ),
    )

    run_max_output_bytes = Int(
        262144,
        min=1024,
        config=True,
        help=(
            "Bytes of stream text (UTF-8) a run in place stores in one cell of the notebook "
            "(default 262144 = 256 KiB). Past this the cell keeps the tail of its output and a "
            "notice linking to the artifact that holds all of it."
        ),
    )

    run_max_outputs = Int(
        1000,
        min=0,
        config=True,
        help=(
            "Outputs other than stream text and errors (displays, results: counted one by one) "
            "a run in place stores in one cell of the notebook (default 1000). Past this the "
            "later ones are left out and a notice says how many. 0 means no limit."
        ),
    )

    artifacts_dir = Unicode(
        ".xcsh-artifacts",
        config=True,
        help=(
            "Folder, relative to the server's contents root, holding artifact files "
            "(default '.xcsh-artifacts'). Hidden by default, out of the person's file browser; "
            "the lab opens artifacts through the artifacts endpoint, agents read them with the "
            "artifact tool. Artifacts of the earlier default folder 'xcsh-artifacts' are moved "
            "into the default folder at start-up (local contents root). A visible name "
            "('xcsh-artifacts') lists them in the file browser again."
        ),
    )

    artifacts_max_bytes = Int(
        512 * 1024 * 1024,
        min=0,
        config=True,
        help=(
            "Total size, in bytes, the artifacts folder may reach (default 536870912 = "
            "512 MiB). Oldest artifacts are removed first past it; 0 disables the size limit."
        ),
    )

    artifacts_max_age = Int(
        7 * 24 * 3600,
        min=0,
        config=True,
        help=(
            "Age, in seconds, after which an artifact is removed (default 604800 = 7 days); "
            "0 keeps artifacts forever."
        ),
    )

    artifacts_upload_max_bytes = Int(
        16 * 1024 * 1024,
        min=1024,
        config=True,
        help=(
            "Where the contents root is not a local directory (a contents manager keeping "
            "files in S3, a database, ...), artifacts are saved through the contents manager, "
            "which takes a file whole: the most bytes one artifact keeps there (default "
            "16777216 = 16 MiB). Output text past it is cut, ending with a line saying so; an "
            "image past it is not kept as an artifact. While written, an artifact is staged in "
            "a temporary file of at most this size; its upload holds it in memory several times "
            "over for a moment (with s3contents the server's peak grew by about five times the "
            "artifact's size). Unused when the root is a local directory."
        ),
    )

    activity_history = Bool(
        True,
        config=True,
        help=(
            "Keep the activity panel's record of agents' calls (the payloads of the lab's "
            "activity events; never stdin answers or passwords) in a SQLite file, served by "
            "GET /api/xcsh/activity so that the panel comes back after a page reload or a "
            "server restart (default True). False keeps nothing; the endpoint answers 404."
        ),
    )

    activity_history_path = Unicode(
        "",
        config=True,
        help=(
            "The SQLite file of the activity history (default '': 'xcsh/activity.sqlite' in "
            "the server's data directory, jupyter_core.paths.jupyter_data_dir()). Several "
            "servers may share one file: each serves the calls of its own contents root."
        ),
    )

    activity_history_max_calls = Int(
        1000,
        min=0,
        config=True,
        help=(
            "Calls the activity history keeps per contents root (default 1000); the oldest "
            "go first. 0 disables the count limit."
        ),
    )

    activity_history_max_age = Int(
        30 * 24 * 3600,
        min=0,
        config=True,
        help=(
            "Age, in seconds, after which a call leaves the activity history (default "
            "2592000 = 30 days); 0 keeps calls until the count limit removes them."
        ),
    )

    stream_interval = Int(
        250,
        min=0,
        config=True,
        help=(
            "Minimum interval, in milliseconds, between two live output chunk callbacks of "
            "one execution (default 250); 0 forwards every chunk."
        ),
    )

    kernel_mode = Enum(
        ["session", "per-call"],
        default_value="session",
        config=True,
        help=(
            "Default mode of the python tool (default 'session'): 'session' keeps one kernel per "
            "caller session name and working directory between calls; 'per-call' starts a kernel "
            "for each call and always shuts it down afterwards. A request's 'mode' overrides it."
        ),
    )

    max_sessions = Int(
        4,
        min=1,
        config=True,
        help=(
            "Most python tool session kernels alive at once (default 4), counting kernels still "
            "shutting down. Past it the least recently used idle session is evicted."
        ),
    )

    idle_timeout = Float(
        300.0,
        min=0,
        config=True,
        help=(
            "Seconds a python tool session may stay idle before its kernel is shut down "
            "(default 300 = 5 minutes); 0 never disposes idle sessions."
        ),
    )

    cleanup_interval = Float(
        30.0,
        min=0,
        config=True,
        help=(
            "Seconds between two sweeps disposing dead or idle python tool sessions "
            "(default 30); 0 disables the sweep."
        ),
    )

    heartbeat_interval = Float(
        5.0,
        min=0,
        config=True,
        help=(
            "Seconds between two liveness checks of every python tool session kernel "
            "(default 5); a kernel found dead is restarted before the session's next call. "
            "0 disables the check."
        ),
    )

    input_timeout = Float(
        300.0,
        min=0.1,
        config=True,
        help=(
            "Seconds a kernel's prompt for input waits for an answer in the python tool's "
            "stdin 'ask' mode (default 300 = 5 minutes) before it gets end-of-file. Time spent "
            "waiting does not count against the call's timeout."
        ),
    )

    mcp_task_after = Float(
        2.0,
        min=0.1,
        config=True,
        help=(
            "Seconds an MCP tools/call that starts or follows a run (python, a notebook run) "
            "answers in before it becomes a task (default 2.0), for a 2026-07-28 client "
            "declaring the Tasks extension (io.modelcontextprotocol/tasks): a quicker call "
            "answers its result, a longer one a task its client polls (tasks/get)."
        ),
    )

    find_timeout = Float(
        2.0,
        min=0.1,
        config=True,
        help=(
            "Seconds a regex search of the notebook tool's find action may run (default 2.0) "
            "before it is stopped and answered with a 400 (a pattern such as (a+)+$ can "
            "backtrack for hours). Regex searches run in a separate process, so a slow one "
            "never blocks the server."
        ),
    )

    require_preconditions = Enum(
        ["never", "index", "always"],
        default_value="never",
        config=True,
        help=(
            "Which notebook tool changes must say what state they expect, with "
            "'expected_source_hash' or 'expected_revision' (default 'never', the original tool's "
            "behaviour): 'index' refuses changes addressed by cell_index without one (an insert "
            "always is), 'always' refuses every change without one. Refusals are 400s."
        ),
    )

    offer_to_jupyter_ai = Bool(
        True,
        config=True,
        help=(
            "Where Jupyter AI 3 is installed, offer this server's MCP endpoint (its URL and "
            "token) to Jupyter AI's personas at start-up, appended to "
            "c.PersonaManager.builtin_mcp_servers (default True; left alone when the operator "
            "set that list). False: the personas get it only from a chat's "
            ".jupyter/mcp_settings.json (jupyter xcsh mcp-config --client jupyter-ai)."
        ),
    )

    fast_paths = Bool(
        True,
        config=True,
        help=(
            "Use the fast paths that lean on private internals of jupyter_client, pyzmq, "
            "jupyter_events, jupyter_server and ipykernel (default True; each is checked once "
            "at startup and falls back to the public API when its internal does not behave as "
            "expected; the startup log names them). False uses the public API everywhere: "
            "every result is the same, calls are slower, and the interventions that need an "
            "internal (guard_saves, take_over_activity_watch, bound_kernel_streams) are off. "
            "See docs/operators/interventions.md."
        ),
    )

    disabled_fast_paths = List(
        Enum(sorted(FAST_PATHS)),
        default_value=[],
        config=True,
        help=(
            "Fast paths turned off one by one (default none): any of "
            + ", ".join(sorted(FAST_PATHS))
            + ". Each then takes the public API, as with fast_paths=False."
        ),
    )

    pause_collector = Bool(
        True,
        config=True,
        help=(
            "Pause Python's cyclic garbage collector, process-wide, while the notebook tool "
            "parses, changes and saves a notebook (default True; each pause lasts at most 2 "
            "seconds). False lets the collector run: large notebooks' edits then sometimes pay "
            "a full collection of the server's heap (60-100 ms)."
        ),
    )

    freeze_startup_heap = Bool(
        True,
        config=True,
        help=(
            "Once the server has started (every extension loaded), collect its garbage and "
            "move the objects left, the server's and the extensions' own (about 200,000), out "
            "of the reach of Python's cyclic garbage collector (gc.freeze; default True). A "
            "full collection walks every object it tracks: with them, one took 60-140 ms of "
            "the event loop every few seconds under load; without them, 30-90 ms. They are "
            "still freed as usual when no longer referenced; only a reference cycle among them "
            "would never be collected. False leaves the collector as Python starts it."
        ),
    )

    notebook_cache_bytes = Int(
        128 * 1024 * 1024,
        config=True,
        help=(
            "The notebooks the tool last read or wrote are kept parsed, and reused while their "
            "file is unchanged since (the file's device, inode, size, times and permissions; "
            "any save through the contents manager forgets it), so repeated edits of a large "
            "notebook skip its parse and signature. At most one per file, the least recently "
            "used dropped past this many characters of notebook text (default 128 MiB; a kept "
            "notebook costs about twice its size in memory). 0 keeps none. Only for contents "
            "managers that keep files, with guard_saves on."
        ),
    )

    trim_memory = Bool(
        True,
        config=True,
        help=(
            "After a python tool call with more than 4 MiB of output, give the memory the "
            "server freed back to the system (glibc's malloc_trim; default True; a no-op "
            "elsewhere). False leaves the server's resident size at its peak after such calls."
        ),
    )

    heap_arenas = Int(
        2,
        config=True,
        help=(
            "The most glibc malloc arenas the server process may use, set when the extension "
            "loads (mallopt M_ARENA_MAX; default 2). glibc gives threads heaps of their own, up "
            "to 8 per core, and memory one worker thread freed (after a large notebook's save, "
            "parse or read) stays in its heap: with 2, the server kept ~48 MB after edits of a "
            "21 MB notebook instead of ~66 MB. 0 leaves glibc's default; a MALLOC_ARENA_MAX "
            "environment variable, when set, is the operator's and is left alone. A no-op "
            "where the C library is not glibc."
        ),
    )

    guard_saves = Bool(
        True,
        config=True,
        help=(
            "Wrap the contents manager's save and atomic_writing on its instance (default "
            "True): every save of a file (the lab's, collaboration rooms', the tool's) waits "
            "for the others of that file, and the tool's saves replace the file whole. False "
            "(or fast_paths=False): only the tool's own saves wait for each other, and a lab "
            "save racing a tool save of the same file may interleave as the server allows."
        ),
    )

    stamp_starting_kernels = Bool(
        True,
        config=True,
        help=(
            "Create each kernel the server starts with the last_activity and execution_state "
            "('starting') the server gives it once started (default True). jupyter_server lists "
            "a starting kernel one event-loop iteration before it sets them, and GET "
            "/api/kernels, /api/status and /api/sessions answer 500 in that window, with or "
            "without this extension. False leaves the server's kernels as it creates them. "
            "Not for a gateway's kernels."
        ),
    )

    take_over_activity_watch = Bool(
        True,
        config=True,
        help=(
            "While the python tool reads a session kernel, close the server's own activity "
            "watcher of that kernel and keep its last_activity/execution_state from the "
            "tool's connection (default True; the server's watcher comes back when the "
            "connection closes). False (or fast_paths=False): the server watches every "
            "kernel itself, decoding each message a second time."
        ),
    )

    bound_kernel_streams = Bool(
        True,
        config=True,
        help=(
            "In session kernels (never a person's kernel), send stdout/stderr in messages of "
            "at most 1 MiB and make IOPub wait for the server rather than queue or drop "
            "(default True; ipykernel only). False (or fast_paths=False): ipykernel's own "
            "behaviour, so a huge print reaches the server as one message it holds whole, "
            "and the server reads IOPub with ZMQ's default queue of 1000 messages."
        ),
    )

    agent_policies = List(
        Dict(),
        default_value=[],
        config=True,
        help=(
            "The operator's agent policies: a list of rules {'path': <API path or glob>, "
            "'kind': 'notebook' | 'folder', 'classes': {<class>: 'allow' | 'ask' | 'deny'}} "
            "(or 'preset': 'full' | 'ask-changes' | 'ask-running' | 'read-only' instead of "
            "'classes'). Classes: read, edit, run (runs in place, python on a notebook's "
            "kernel), python (the python tool's own kernels), destructive (deleting cells or "
            "files, overwriting a file, restarting or changing a kernel). A folder rule covers "
            "everything under it ('' is the root); in a glob '*' crosses folders. Every "
            "matching operator rule counts and the strictest decision wins; the person's "
            "rules set in the lab can make it stricter, never looser. Default []: everything "
            "allowed (unless the person sets rules). Example: [{'path': 'prod', 'kind': "
            "'folder', 'preset': 'read-only'}, {'path': '*.ipynb', 'kind': 'notebook', "
            "'classes': {'destructive': 'ask'}}]."
        ),
    )

    policy_store_path = Unicode(
        "",
        config=True,
        help=(
            "The JSON file holding the person's agent policies, set in the lab (default '': "
            "'xcsh/policies.json' in the server's data directory, "
            "jupyter_core.paths.jupyter_data_dir()). Keep it outside the contents root: no "
            "agent tool may read or change it (a files tool action on it is refused)."
        ),
    )

    approval_timeout = Float(
        120.0,
        min=0.0,
        config=True,
        help=(
            "Seconds an agent's call waits for the person's answer to an approval when the "
            "call gives no timeout of its own (default 120). Past it, the call is refused "
            "(approval_required) and nothing is changed; 0 refuses at once."
        ),
    )

    approval_presence = Float(
        30.0,
        min=0.0,
        config=True,
        help=(
            "Seconds a lab counts as open after its last request for the approvals ended (GET "
            "/api/xcsh/approvals; the lab keeps a long poll waiting, and counts as open "
            "all the while one is held) (default 30). With no lab open, a call that needs an "
            "approval is refused at once (approval_required)."
        ),
    )
