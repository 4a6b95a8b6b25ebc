"""The annotated ``hermes.yaml.example``: every key with its default and what it does."""

from __future__ import annotations

EXAMPLE_CONFIG = """\
# hermes.yaml — Hermes configuration.
# Hermes looks for: --config FILE, then $HERMES_CONFIG, then ./hermes.yaml,
# then ~/.hermes/hermes.yaml; with no file it runs the offline rule brain.
# 没有配置文件时使用离线规则引擎（offline rule brain），数据存放在 ./.hermes/ 下。
#
# Any string value may use ${VAR} or ${VAR:-default}; variables come from the
# environment or a .env file (the environment wins). Write $${ for a literal "${".
# 密钥请放在环境变量或 .env 文件中，不要直接写进配置文件。

# An OpenAI-compatible chat completions server. Remove this section (or write
# `model: null`) to use the offline rule brain instead.
model:
  provider: openai_compatible
  # A local server: vLLM, llama.cpp server, Ollama (http://127.0.0.1:11434/v1), LM Studio ...
  base_url: ${HERMES_BASE_URL:-http://127.0.0.1:8000/v1}
  # Local servers usually need no key; an empty value means "send none".
  api_key: ${HERMES_API_KEY:-}
  model: ${HERMES_MODEL:-qwen2.5-7b-instruct}
  temperature: 0.2          # 0..2; tool calling wants it low (seed 002 §3.1)
  max_tokens: null          # null: the server's default
  timeout: 60               # seconds to wait for each read/write of a request
  connect_timeout: 10       # seconds to open the connection
  max_retries: 2            # 0..10, on timeouts and 5xx
  tool_mode: native         # native: the server's `tools`; hermes: <tool_call> tags in the prompt
  stream: false
  extra_headers: {}         # e.g. {X-Tenant: ops}

agent:
  instructions: null        # system prompt; null: Hermes's built-in one (with a model)
  max_iterations: 8         # model calls per turn
  turn_timeout: 120         # seconds
  context_rounds: 12        # recent rounds kept verbatim, older ones summarised
  context_budget_tokens: 6000
  max_message_chars: 100000
  summary_min_backlog: 8
  max_unknown_tools: 3      # hallucinated tool names before the turn stops
  default_user: null        # user of `hermes run/chat` and `hermes memory` without --user;
                            # null: the OS account name (else "local") / 命令行默认用户
  timezone: null            # IANA zone for "what time is it" with no place, e.g. Asia/Shanghai;
                            # null: this machine's zone (else UTC) / 默认时区

store:
  path: .hermes/hermes.db   # SQLite; relative to the directory Hermes runs in

logging:
  file: .hermes/logs/hermes.log   # JSON lines; null disables logging
  level: INFO               # DEBUG, INFO, WARNING or ERROR

brain:
  intents: []               # extra intent YAML files for the offline brain
                            # 自定义意图文件（中英文关键词与槽位）

tools:
  builtins: [calculator, current_time]   # the built-in tools offered (these two exist now)
  workspace: .              # the directory tools see as ToolContext.workspace
  plugins_dir: null         # a directory of plugin *.py files (@tool functions or TOOL_METADATA)
                            # 插件目录：启动时加载其中的 .py 工具文件；有问题的文件会被跳过并报告
  toolset_limit: 20         # more tools than this: offer only the toolsets relevant to the message
  http_allow: []            # private/loopback hosts or CIDRs http_request may reach (SSRF guard)

# Users → roles → scopes. Off: tool `permissions` are not enforced and nothing is audited.
# 权限控制（RBAC）：用户 → 角色 → 权限范围；关闭时不检查工具权限。
rbac:
  enabled: false
  roles: {}                 # e.g. {staff: {scopes: ["order:read"]},
                            #       admin: {scopes: ["*"], inherits: [staff]}}
                            # "order:*" grants order and every scope below it; "*" grants all
  default_role: null        # the role of users not listed below (and of anonymous callers)
  users: {}                 # e.g. {alice: {roles: [admin]}}
  audit_log: .hermes/audit.log   # JSON lines: who, which tool, when, allow/deny (审计日志)

# MCP servers whose tools the agent offers, named <prefix>__<tool> (prefix: the server's name).
# The {"mcpServers": {...}} JSON of other MCP clients can be pasted here unchanged.
# MCP 服务器：其工具以 <前缀>__<工具名> 提供给模型；也可直接粘贴其他客户端的 mcpServers 配置。
mcp_servers: {}
#  files:                            # stdio: a child process with only PATH/HOME/LANG + env
#    command: npx
#    args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]
#    env: {}                         # secrets as ${VAR}
#    cwd: null
#    tools: {include: [], exclude: ["write_*"]}   # glob patterns on the server's tool names
#    timeout: 30                     # seconds per call
#    connect_timeout: 10             # seconds to start, initialize and list tools
#    enabled: true
#    permissions: []                 # rbac scopes a user needs for every tool of this server
#    requires_approval: ["write_*"]  # true/false, or globs of tools a person must approve
#  search:
#    url: http://127.0.0.1:8931/mcp
#    transport: streamable_http      # the default for a url; or sse
#    headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
#    prefix: web

# `hermes mcp serve`: offer this agent's tools to other MCP clients.
# 把 Hermes 的工具通过 MCP 提供给其他客户端。
mcp_serve:
  transport: stdio          # stdio | http
  host: 127.0.0.1           # http: anything but loopback needs a token
  port: 8765
  token: null               # http bearer token, e.g. ${HERMES_MCP_TOKEN}
  allow_approval: false     # tools needing a person's approval are refused over MCP unless true
  include_mcp_tools: false  # also serve the tools of mcp_servers above
  user: null                # the user id calls run as (for rbac)

# Memory: tool-call index + archive, working memory, long-term memories per user.
# 记忆：工具调用索引与归档、工作记忆、按用户隔离的长期记忆。
memory:
  enabled: true
  dir: null                 # memory.db + archive/; null: beside the session database
  extraction: auto          # auto (the model if configured, else rules) | rules | model | off
  threshold: 0.8            # keep a memory only above this confidence (置信度阈值)
  habits: false             # implicit habits (a behaviour seen more than 3 times)
  semantic: auto            # auto: vector recall when hermes[semantic] is installed | off
  cross_language: auto      # auto: keyword recall crosses Chinese↔English (中英互查) | off
  recall_min_score: 0.45
  recall_max_items: 5
  recency_days: 30          # habits/events older than this are not recalled
  fill_arguments: true      # complete missing tool arguments from memory (never overrides)
  tool_index: true          # record every tool call (L2 index) and its output (L3 archive)
  upkeep_interval_hours: 24 # merge / demote / resolve conflicts; null: only `hermes memory upkeep`
  demote_after_days: 90     # never-recalled memories are demoted after this …
  delete_after_days: 180    # … and deleted after this
  tool_calls_retention_days: 90   # upkeep prunes older tool-call index entries and their outputs

# `hermes serve`: the HTTP API (docs/http.md). Loopback and anonymous by default.
# HTTP 服务：默认只监听本机；配置 api_keys 后每个请求都要带密钥。
server:
  host: 127.0.0.1
  port: 8000
  api_keys: []              # [{key: ${HERMES_API_KEY}, user: alice, roles: [admin]}]
                            # roles: names of rbac.roles, or admin (may act for any user)
  allow_anonymous: false    # serve a non-loopback host without keys (refused otherwise)
  rate_limit: {per_minute: null}  # requests per key (per address when anonymous) and minute -> 429
  max_body_bytes: 1048576   # larger bodies are 413
  cors_origins: []          # none by default
  busy: enqueue             # a busy session: enqueue (wait its turn) | reject (409)
  model_id: hermes          # the id GET /v1/models lists (OpenAI-compatible routes)
  events_keep_seconds: 3600 # a turn's events stay replayable this long (SSE resume)
  idempotency_hours: 24     # Idempotency-Key records are kept this long
  shutdown_grace_seconds: 15  # SIGTERM waits this long for running turns, then checkpoints

# --- sched ---
# Cron jobs: a message sent as a turn of a session, on a schedule (docs/scheduler.md).
# 定时任务：按 cron 表达式定时把消息发给某个会话；必须显式设置时区。
scheduler:
  timezone: null            # IANA zone of every schedule, e.g. Asia/Shanghai; required with jobs
  jobs: []                  # e.g. [{name: daily-report, cron: "0 9 * * *",
                            #        message: 生成昨日核心指标报告, session_id: ops-daily-report,
                            #        user_id: null, deliver_to: null, misfire: run_once,
                            #        enabled: true}]  (or plan: {template: NAME, params: {}})
                            # misfire: run_once (one catch-up run after downtime) | skip
  jobs_dir: null            # a directory of *.py files with @scheduled_job functions
  deliver_secret: null      # HMAC-SHA256 key signing deliver_to POSTs (${HERMES_DELIVER_SECRET})
  deliver_attempts: 4       # POST attempts per delivery (retried with backoff on 5xx/429/network)
  deliver_timeout: 10       # seconds per attempt
# --- end sched ---

# --- events ---
# Inbound events: POST /v1/events and /v1/events/ROUTE (docs/webhooks.md), deduplicated by msg_id.
# 入站事件（Webhook）：按 msg_id 持久去重；配置 secret 后必须带签名。
webhooks:
  secret: null              # HMAC-SHA256 key of X-Hermes-Signature (${HERMES_WEBHOOK_SECRET})
  dedupe_hours: 72          # a delivered msg_id is remembered this long (senders retry for days)
  signature_tolerance_seconds: 300  # X-Hermes-Timestamp may be this far off, either way
  routes: {}                # e.g. {db-alerts: {session_id: ops-db-alerts, user_id: ops,
                            #   handler: {prompt: "告警：{content}。处理并通知值班群"},
                            #   secret: null}}   (or handler: {intent: NAME} of the rule brain)
# --- end events ---
# --- plans ---
# Multi-call plans: named templates of dependent tool calls (docs/plans.md).
# 多步调用计划：plans/ 目录下的命名模板；默认 API 和模型只能启动模板。
plans:
  dir: plans                # the templates: plans/*.yaml (hermes plan run NAME)
  allow_freeform: false     # the HTTP API and models may start only templates
  concurrency: 8            # nodes of one run calling their tools at once
  lease_seconds: 30         # a dead runner's run can be resumed after this long
# --- end plans ---
"""
