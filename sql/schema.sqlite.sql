-- slurmtools ledger schema for sqlite, generated from slurmtools/ledger/models.py.
-- Do not edit: python -m slurmtools.ledger.schema --write

CREATE TABLE checkpoint_events (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(255) NOT NULL,
	job_id BIGINT NOT NULL,
	restart_count INTEGER NOT NULL,
	kind VARCHAR(8) NOT NULL,
	time DATETIME NOT NULL,
	seconds FLOAT,
	source VARCHAR(32) NOT NULL,
	nbytes BIGINT,
	bytes_source VARCHAR(16),
	rpcs BIGINT,
	queue_ms_per_op FLOAT,
	rtt_ms_per_op FLOAT,
	gbytes_per_s FLOAT,
	utilisation FLOAT,
	mountpoint TEXT,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_checkpoint_events_node ON checkpoint_events (node);

CREATE INDEX ix_checkpoint_events_time ON checkpoint_events (time);

CREATE INDEX ix_checkpoint_job ON checkpoint_events (cluster, job_id);

CREATE TABLE exclusions (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128) NOT NULL,
	scope VARCHAR(8) NOT NULL,
	reason TEXT NOT NULL,
	source VARCHAR(64) NOT NULL,
	start DATETIME NOT NULL,
	expires DATETIME,
	"end" DATETIME,
	outcome VARCHAR(16),
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_exclusions_end ON exclusions ("end");

CREATE INDEX ix_exclusions_node ON exclusions (cluster, node, start);

CREATE TABLE failed_job_names (
	cluster VARCHAR(64) NOT NULL,
	user VARCHAR(64) NOT NULL,
	name VARCHAR(256) NOT NULL,
	PRIMARY KEY (cluster, user, name)
);

CREATE TABLE gate_pass_counts (
	id INTEGER NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128) NOT NULL,
	profile VARCHAR(16) NOT NULL,
	day VARCHAR(10) NOT NULL,
	passes INTEGER NOT NULL,
	total_ms BIGINT NOT NULL,
	last_pass DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (cluster, node, profile, day)
);

CREATE TABLE gate_runs (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128) NOT NULL,
	time DATETIME NOT NULL,
	job_id BIGINT,
	profile VARCHAR(16) NOT NULL,
	verdict VARCHAR(16) NOT NULL,
	duration_ms INTEGER NOT NULL,
	failed_checks TEXT NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_gate_runs_node_time ON gate_runs (cluster, node, time);

CREATE INDEX ix_gate_runs_verdict ON gate_runs (verdict);

CREATE TABLE interrupted_attempts (
	cluster VARCHAR(64) NOT NULL,
	job_id BIGINT NOT NULL,
	restart_count INTEGER NOT NULL,
	PRIMARY KEY (cluster, job_id, restart_count)
);

CREATE TABLE io_summaries (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(255) NOT NULL,
	job_id BIGINT NOT NULL,
	restart_count INTEGER NOT NULL,
	time DATETIME NOT NULL,
	mountpoint TEXT NOT NULL,
	device TEXT NOT NULL,
	seconds FLOAT NOT NULL,
	read_bytes BIGINT NOT NULL,
	write_bytes BIGINT NOT NULL,
	read_ops BIGINT NOT NULL,
	write_ops BIGINT NOT NULL,
	rtt_ms FLOAT,
	queue_ms FLOAT,
	mean_backlog FLOAT,
	retransmissions INTEGER NOT NULL,
	"limit" VARCHAR(24),
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_io_job ON io_summaries (cluster, job_id);

CREATE INDEX ix_io_summaries_node ON io_summaries (node);

CREATE INDEX ix_io_summaries_time ON io_summaries (time);

CREATE TABLE meta (
	"key" VARCHAR(128) NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY ("key")
);

CREATE TABLE node_events (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128) NOT NULL,
	start DATETIME NOT NULL,
	"end" DATETIME,
	state VARCHAR(32) NOT NULL,
	category VARCHAR(64),
	reason TEXT NOT NULL,
	source VARCHAR(64) NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_node_events_category ON node_events (category);

CREATE INDEX ix_node_events_node_start ON node_events (cluster, node, start);

CREATE TABLE node_state_changes (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128) NOT NULL,
	time DATETIME NOT NULL,
	action VARCHAR(16) NOT NULL,
	actor VARCHAR(64) NOT NULL,
	reason TEXT NOT NULL,
	applied BOOLEAN NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_node_state_changes_action ON node_state_changes (action);

CREATE INDEX ix_node_state_node_time ON node_state_changes (cluster, node, time);

CREATE TABLE nodes (
	id INTEGER NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	name VARCHAR(128) NOT NULL,
	first_seen DATETIME NOT NULL,
	last_seen DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (cluster, name)
);

CREATE TABLE perf_results (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(255) NOT NULL,
	time DATETIME NOT NULL,
	profile VARCHAR(16) NOT NULL,
	gpu_index INTEGER NOT NULL,
	uuid VARCHAR(96) NOT NULL,
	model VARCHAR(96) NOT NULL,
	pci_bus_id VARCHAR(32),
	status VARCHAR(8) NOT NULL,
	d2d_gbps FLOAT,
	h2d_gbps FLOAT,
	d2h_gbps FLOAT,
	fp32_tflops FLOAT,
	sm_mhz_min INTEGER,
	power_w_max INTEGER,
	clocks_event_reasons BIGINT,
	seconds FLOAT,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_perf_gpu_time ON perf_results (cluster, uuid, time);

CREATE INDEX ix_perf_model_time ON perf_results (model, time);

CREATE INDEX ix_perf_results_node ON perf_results (node);

CREATE TABLE retry_chains (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	root_job_id BIGINT NOT NULL,
	user VARCHAR(64),
	created DATETIME NOT NULL,
	max_retries INTEGER NOT NULL,
	retry_on VARCHAR(16) NOT NULL,
	status VARCHAR(16) NOT NULL,
	retries_used INTEGER NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key)
);

CREATE INDEX ix_retry_chains_root_job_id ON retry_chains (root_job_id);

CREATE INDEX ix_retry_chains_status ON retry_chains (status);

CREATE TABLE shipped_keys (
	idempotency_key VARCHAR(64) NOT NULL,
	time DATETIME NOT NULL,
	PRIMARY KEY (idempotency_key)
);

CREATE TABLE chain_jobs (
	id INTEGER NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	job_id BIGINT NOT NULL,
	chain_id INTEGER NOT NULL,
	created DATETIME NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (cluster, job_id),
	FOREIGN KEY(chain_id) REFERENCES retry_chains (id)
);

CREATE INDEX ix_chain_jobs_chain_id ON chain_jobs (chain_id);

CREATE TABLE controller_decisions (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	job_id BIGINT NOT NULL,
	restart_count INTEGER NOT NULL,
	chain_id INTEGER,
	classification VARCHAR(16) NOT NULL,
	decision VARCHAR(16) NOT NULL,
	reason TEXT NOT NULL,
	excluded_nodes TEXT NOT NULL,
	status VARCHAR(16) NOT NULL,
	t_ended DATETIME,
	t_detected DATETIME,
	t_decided DATETIME,
	t_requeued DATETIME,
	t_released DATETIME,
	t_verified DATETIME,
	t_running DATETIME,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key),
	FOREIGN KEY(chain_id) REFERENCES retry_chains (id)
);

CREATE INDEX ix_controller_decisions_status ON controller_decisions (status);

CREATE INDEX ix_decisions_job ON controller_decisions (cluster, job_id, restart_count);

CREATE TABLE job_attempts (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	job_id BIGINT NOT NULL,
	restart_count INTEGER NOT NULL,
	sluid VARCHAR(16),
	submit_time DATETIME,
	start_time DATETIME,
	end_time DATETIME,
	state VARCHAR(32),
	exit_code INTEGER,
	exit_signal INTEGER,
	nodes TEXT,
	node_count INTEGER,
	user VARCHAR(64),
	name VARCHAR(256),
	partition VARCHAR(64),
	source VARCHAR(32) NOT NULL,
	chain_id INTEGER,
	details JSON NOT NULL,
	interrupted BOOLEAN DEFAULT 0 NOT NULL,
	name_failed BOOLEAN DEFAULT 0 NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (cluster, job_id, restart_count, submit_time),
	UNIQUE (idempotency_key),
	FOREIGN KEY(chain_id) REFERENCES retry_chains (id)
);

CREATE INDEX ix_job_attempts_chain_id ON job_attempts (chain_id);

CREATE INDEX ix_job_attempts_end ON job_attempts (end_time);

CREATE INDEX ix_job_attempts_job ON job_attempts (cluster, job_id, restart_count);

CREATE INDEX ix_job_attempts_sluid ON job_attempts (cluster, sluid);

CREATE INDEX ix_job_attempts_state ON job_attempts (state);

CREATE INDEX ix_job_attempts_user_name ON job_attempts (cluster, user, name, submit_time);

CREATE TABLE findings (
	id INTEGER NOT NULL,
	idempotency_key VARCHAR(64) NOT NULL,
	cluster VARCHAR(64) NOT NULL,
	node VARCHAR(128),
	time DATETIME NOT NULL,
	job_id BIGINT,
	restart_count INTEGER,
	sluid VARCHAR(16),
	attempt_id INTEGER,
	source VARCHAR(32) NOT NULL,
	kind VARCHAR(32) NOT NULL,
	xid INTEGER,
	pci VARCHAR(32),
	gpu VARCHAR(64),
	category VARCHAR(16) NOT NULL,
	severity VARCHAR(16) NOT NULL,
	action VARCHAR(16) NOT NULL,
	trust VARCHAR(16) NOT NULL,
	message TEXT NOT NULL,
	details JSON NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (idempotency_key),
	FOREIGN KEY(attempt_id) REFERENCES job_attempts (id)
);

CREATE INDEX ix_findings_category ON findings (category);

CREATE INDEX ix_findings_infra ON findings (cluster, node, time, id) WHERE category IN ('hardware', 'driver', 'network', 'filesystem') AND trust <> 'job' AND severity IN ('error', 'critical');

CREATE INDEX ix_findings_investigate ON findings (cluster, time) WHERE action = 'investigate';

CREATE INDEX ix_findings_job ON findings (cluster, job_id, restart_count);

CREATE INDEX ix_findings_kind ON findings (kind);

CREATE INDEX ix_findings_node_time ON findings (cluster, node, time);

CREATE INDEX ix_findings_xid ON findings (xid);
