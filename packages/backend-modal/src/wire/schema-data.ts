// GENERATED from fields.json by scripts/gen-schema.mjs: do not edit. To change the schema, edit
// fields.json and run `npm run gen:schema -w @berth/backend-modal`; test/schema-generated.unit.test.ts
// fails while this file and fields.json disagree.
//
// The parts of Modal's protobuf API the backend speaks, as a .ts constant so nothing reads files at
// run time and the value types keep their literals.
import type { Schema } from './schema-spec.js';

export const SCHEMA = {
  AuthTokenGetRequest: {
    package: 'modal.client',
    fields: {},
  },
  AuthTokenGetResponse: {
    package: 'modal.client',
    fields: {
      token: { number: 1, type: 'string' },
    },
  },
  AppGetOrCreateRequest: {
    package: 'modal.client',
    fields: {
      app_name: { number: 1, type: 'string' },
      environment_name: { number: 2, type: 'string' },
      object_creation_type: { number: 3, type: 'ObjectCreationType' },
    },
  },
  AppGetOrCreateResponse: {
    package: 'modal.client',
    fields: {
      app_id: { number: 1, type: 'string' },
    },
  },
  ObjectCreationType: {
    package: 'modal.client',
    enum: {
      OBJECT_CREATION_TYPE_UNSPECIFIED: 0,
      OBJECT_CREATION_TYPE_CREATE_IF_MISSING: 1,
      OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS: 2,
      OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS: 3,
      OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP: 4,
      OBJECT_CREATION_TYPE_EPHEMERAL: 5,
    },
  },
  ClientType: {
    package: 'modal.client',
    enum: {
      CLIENT_TYPE_UNSPECIFIED: 0,
      CLIENT_TYPE_CLIENT: 1,
      CLIENT_TYPE_WORKER: 2,
      CLIENT_TYPE_CONTAINER: 3,
      CLIENT_TYPE_WEB_SERVER: 5,
      CLIENT_TYPE_NOTEBOOK_KERNEL: 6,
      CLIENT_TYPE_LIBMODAL: 7,
      CLIENT_TYPE_LIBMODAL_JS: 8,
      CLIENT_TYPE_LIBMODAL_GO: 9,
    },
  },
  EnvironmentGetOrCreateRequest: {
    package: 'modal.client',
    fields: {
      deployment_name: { number: 1, type: 'string' },
      object_creation_type: { number: 2, type: 'ObjectCreationType' },
    },
  },
  EnvironmentGetOrCreateResponse: {
    package: 'modal.client',
    fields: {
      environment_id: { number: 1, type: 'string' },
      metadata: { number: 2, type: 'EnvironmentMetadata' },
    },
  },
  SecretGetOrCreateRequest: {
    package: 'modal.client',
    fields: {
      deployment_name: { number: 1, type: 'string' },
      environment_name: { number: 3, type: 'string' },
      object_creation_type: { number: 4, type: 'ObjectCreationType' },
      env_dict: { number: 5, type: 'map<string,string>' },
      app_id: { number: 6, type: 'string' },
      required_keys: { number: 7, type: 'string', label: 'repeated' },
    },
  },
  SecretGetOrCreateResponse: {
    package: 'modal.client',
    fields: {
      secret_id: { number: 1, type: 'string' },
      metadata: { number: 2, type: 'SecretMetadata' },
    },
  },
  SecretSource: {
    package: 'modal.client',
    fields: {
      secret_id: { number: 1, type: 'string', oneof: 'source' },
      env: { number: 2, type: 'StringMap', oneof: 'source' },
    },
  },
  StringMap: {
    package: 'modal.client',
    fields: {
      contents: { number: 1, type: 'map<string,string>' },
    },
  },
  ImageGetOrCreateRequest: {
    package: 'modal.client',
    fields: {
      image: { number: 2, type: 'Image' },
      app_id: { number: 4, type: 'string' },
      existing_image_id: { number: 5, type: 'string' },
      build_function_id: { number: 6, type: 'string' },
      force_build: { number: 7, type: 'bool' },
      namespace: { number: 8, type: 'DeploymentNamespace' },
      builder_version: { number: 9, type: 'string' },
      allow_global_deployment: { number: 10, type: 'bool' },
      ignore_cache: { number: 11, type: 'bool' },
    },
  },
  ImageGetOrCreateResponse: {
    package: 'modal.client',
    fields: {
      image_id: { number: 1, type: 'string' },
      result: { number: 2, type: 'GenericResult' },
      metadata: { number: 3, type: 'ImageMetadata' },
    },
  },
  Image: {
    package: 'modal.client',
    fields: {
      base_images: { number: 5, type: 'BaseImage', label: 'repeated' },
      dockerfile_commands: { number: 6, type: 'string', label: 'repeated' },
      context_files: { number: 7, type: 'ImageContextFile', label: 'repeated' },
      version: { number: 11, type: 'string' },
      secret_ids: { number: 12, type: 'string', label: 'repeated' },
      context_mount_id: { number: 15, type: 'string' },
      gpu_config: { number: 16, type: 'GPUConfig' },
      image_registry_config: { number: 17, type: 'ImageRegistryConfig' },
      build_function_def: { number: 14, type: 'string' },
      build_function_globals: { number: 18, type: 'bytes' },
      runtime: { number: 19, type: 'string' },
      runtime_debug: { number: 20, type: 'bool' },
      build_function: { number: 21, type: 'BuildFunction' },
      build_args: { number: 22, type: 'map<string,string>' },
      volume_mounts: { number: 23, type: 'VolumeMount', label: 'repeated' },
    },
  },
  BaseImage: {
    package: 'modal.client',
    fields: {
      image_id: { number: 1, type: 'string' },
      docker_tag: { number: 2, type: 'string' },
    },
  },
  ImageRegistryConfig: {
    package: 'modal.client',
    fields: {
      registry_auth_type: { number: 1, type: 'RegistryAuthType' },
      secret_id: { number: 2, type: 'string' },
    },
  },
  RegistryAuthType: {
    package: 'modal.client',
    enum: {
      REGISTRY_AUTH_TYPE_UNSPECIFIED: 0,
      REGISTRY_AUTH_TYPE_AWS: 1,
      REGISTRY_AUTH_TYPE_GCP: 2,
      REGISTRY_AUTH_TYPE_PUBLIC: 3,
      REGISTRY_AUTH_TYPE_STATIC_CREDS: 4,
    },
  },
  ImageJoinStreamingRequest: {
    package: 'modal.client',
    fields: {
      image_id: { number: 1, type: 'string' },
      timeout: { number: 2, type: 'float' },
      last_entry_id: { number: 3, type: 'string' },
      include_logs_for_finished: { number: 4, type: 'bool' },
    },
  },
  ImageJoinStreamingResponse: {
    package: 'modal.client',
    fields: {
      result: { number: 1, type: 'GenericResult' },
      task_logs: { number: 2, type: 'TaskLogs', label: 'repeated' },
      entry_id: { number: 3, type: 'string' },
      eof: { number: 4, type: 'bool' },
      metadata: { number: 5, type: 'ImageMetadata' },
    },
  },
  TaskLogs: {
    package: 'modal.client',
    fields: {
      data: { number: 1, type: 'string' },
      timestamp: { number: 7, type: 'double' },
      file_descriptor: { number: 8, type: 'FileDescriptor' },
    },
  },
  FileDescriptor: {
    package: 'modal.client',
    enum: {
      FILE_DESCRIPTOR_UNSPECIFIED: 0,
      FILE_DESCRIPTOR_STDOUT: 1,
      FILE_DESCRIPTOR_STDERR: 2,
      FILE_DESCRIPTOR_INFO: 3,
    },
  },
  GenericResult: {
    package: 'modal.client',
    fields: {
      status: { number: 1, type: 'GenericStatus' },
      exception: { number: 2, type: 'string' },
      exitcode: { number: 3, type: 'int32' },
      traceback: { number: 4, type: 'string' },
      serialized_tb: { number: 11, type: 'bytes' },
      tb_line_cache: { number: 12, type: 'bytes' },
      data: { number: 5, type: 'bytes', oneof: 'data_oneof' },
      data_blob_id: { number: 10, type: 'string', oneof: 'data_oneof' },
      propagation_reason: { number: 13, type: 'string' },
    },
  },
  SandboxCreateRequest: {
    package: 'modal.client',
    fields: {
      app_id: { number: 1, type: 'string' },
      definition: { number: 2, type: 'Sandbox' },
      environment_name: { number: 3, type: 'string' },
      tags: { number: 4, type: 'SandboxTag', label: 'repeated' },
    },
  },
  SandboxCreateResponse: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string' },
      metadata: { number: 2, type: 'SandboxHandleMetadata' },
    },
  },
  Sandbox: {
    package: 'modal.client',
    fields: {
      entrypoint_args: { number: 1, type: 'string', label: 'repeated' },
      mount_ids: { number: 2, type: 'string', label: 'repeated' },
      image_id: { number: 3, type: 'string' },
      secret_ids: { number: 4, type: 'string', label: 'repeated' },
      resources: { number: 5, type: 'Resources' },
      cloud_provider: { number: 6, type: 'CloudProvider' },
      timeout_secs: { number: 7, type: 'uint32' },
      workdir: { number: 8, type: 'string', label: 'optional' },
      nfs_mounts: { number: 9, type: 'SharedVolumeMount', label: 'repeated' },
      runtime_debug: { number: 10, type: 'bool' },
      block_network: { number: 11, type: 'bool' },
      s3_mounts: { number: 12, type: 'S3Mount', label: 'repeated' },
      cloud_bucket_mounts: { number: 14, type: 'CloudBucketMount', label: 'repeated' },
      volume_mounts: { number: 13, type: 'VolumeMount', label: 'repeated' },
      pty_info: { number: 15, type: 'PTYInfo' },
      scheduler_placement: { number: 17, type: 'SchedulerPlacement', label: 'optional' },
      worker_id: { number: 19, type: 'string' },
      open_ports: { number: 20, type: 'PortSpecs', oneof: 'open_ports_oneof' },
      i6pn_enabled: { number: 21, type: 'bool' },
      network_access: { number: 22, type: 'NetworkAccess' },
      proxy_id: { number: 23, type: 'string', label: 'optional' },
      enable_snapshot: { number: 24, type: 'bool' },
      snapshot_version: { number: 25, type: 'uint32', label: 'optional' },
      cloud_provider_str: { number: 26, type: 'string' },
      runsc_runtime_version: { number: 27, type: 'string', label: 'optional' },
      runtime: { number: 28, type: 'string', label: 'optional' },
      verbose: { number: 29, type: 'bool' },
      name: { number: 30, type: 'string', label: 'optional' },
      experimental_options: { number: 31, type: 'map<string,bool>' },
      experimental_options_v2: { number: 41, type: 'map<string,string>' },
      preload_path_prefixes: { number: 32, type: 'string', label: 'repeated' },
      idle_timeout_secs: { number: 33, type: 'uint32', label: 'optional' },
      direct_sandbox_commands_enabled: { number: 34, type: 'bool' },
      _restore_instance_type: { number: 35, type: 'string' },
      custom_domain: { number: 36, type: 'string' },
      include_oidc_identity_token: { number: 37, type: 'bool' },
      readiness_probe: { number: 38, type: 'Probe', label: 'optional' },
      inbound_cidr_allowlist: { number: 39, type: 'string', label: 'repeated' },
      environment_variables: { number: 40, type: 'StringMap' },
    },
  },
  Resources: {
    package: 'modal.client',
    fields: {
      memory_mb: { number: 2, type: 'uint32' },
      milli_cpu: { number: 3, type: 'uint32' },
      gpu_config: { number: 4, type: 'GPUConfig' },
      memory_mb_max: { number: 5, type: 'uint32' },
      ephemeral_disk_mb: { number: 6, type: 'uint32' },
      milli_cpu_max: { number: 7, type: 'uint32' },
      rdma: { number: 8, type: 'bool' },
    },
  },
  GPUConfig: {
    package: 'modal.client',
    fields: {
      type: { number: 1, type: 'GPUType' },
      count: { number: 2, type: 'uint32' },
      gpu_type: { number: 4, type: 'string' },
    },
  },
  NetworkAccess: {
    package: 'modal.client',
    fields: {
      network_access_type: { number: 1, type: 'NetworkAccessType' },
      allowed_cidrs: { number: 2, type: 'string', label: 'repeated' },
      allowed_domains: { number: 3, type: 'string', label: 'repeated' },
    },
  },
  SandboxTag: {
    package: 'modal.client',
    fields: {
      tag_name: { number: 1, type: 'string' },
      tag_value: { number: 2, type: 'string' },
    },
  },
  SchedulerPlacement: {
    package: 'modal.client',
    fields: {
      regions: { number: 4, type: 'string', label: 'repeated' },
      _zone: { number: 2, type: 'string', label: 'optional' },
      _lifecycle: { number: 3, type: 'string', label: 'optional' },
      _instance_types: { number: 5, type: 'string', label: 'repeated' },
      nonpreemptible: { number: 6, type: 'bool' },
    },
  },
  SandboxWaitRequest: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string' },
      timeout: { number: 2, type: 'float' },
    },
  },
  SandboxWaitResponse: {
    package: 'modal.client',
    fields: {
      result: { number: 1, type: 'GenericResult' },
      metadata: { number: 2, type: 'SandboxHandleMetadata' },
    },
  },
  SandboxTerminateRequest: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string' },
    },
  },
  SandboxTerminateResponse: {
    package: 'modal.client',
    fields: {
      existing_result: { number: 1, type: 'GenericResult' },
    },
  },
  SandboxGetTaskIdRequest: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string' },
      timeout: { number: 2, type: 'float', label: 'optional' },
      wait_until_ready: { number: 3, type: 'bool' },
    },
  },
  SandboxGetTaskIdResponse: {
    package: 'modal.client',
    fields: {
      task_id: { number: 1, type: 'string', label: 'optional' },
      task_result: { number: 2, type: 'GenericResult', label: 'optional' },
    },
  },
  SandboxListRequest: {
    package: 'modal.client',
    fields: {
      app_id: { number: 1, type: 'string' },
      before_timestamp: { number: 2, type: 'double' },
      environment_name: { number: 3, type: 'string' },
      include_finished: { number: 4, type: 'bool' },
      tags: { number: 5, type: 'SandboxTag', label: 'repeated' },
    },
  },
  SandboxListResponse: {
    package: 'modal.client',
    fields: {
      sandboxes: { number: 1, type: 'SandboxInfo', label: 'repeated' },
    },
  },
  SandboxInfo: {
    package: 'modal.client',
    fields: {
      id: { number: 1, type: 'string' },
      created_at: { number: 3, type: 'double' },
      task_info: { number: 4, type: 'TaskInfo' },
      app_id: { number: 5, type: 'string' },
      tags: { number: 6, type: 'SandboxTag', label: 'repeated' },
      name: { number: 7, type: 'string' },
      image_id: { number: 8, type: 'string' },
      resource_info: { number: 9, type: 'ResourceInfo' },
      regions: { number: 10, type: 'string', label: 'repeated' },
      timeout_secs: { number: 11, type: 'uint32' },
      idle_timeout_secs: { number: 12, type: 'uint32', label: 'optional' },
      ready_at: { number: 13, type: 'double', label: 'optional' },
      readiness_probe: { number: 14, type: 'Probe', label: 'optional' },
      tunnels: { number: 15, type: 'TunnelData', label: 'repeated' },
      metadata: { number: 16, type: 'SandboxHandleMetadata' },
    },
  },
  SandboxTagsSetRequest: {
    package: 'modal.client',
    fields: {
      environment_name: { number: 1, type: 'string' },
      sandbox_id: { number: 2, type: 'string' },
      tags: { number: 3, type: 'SandboxTag', label: 'repeated' },
    },
  },
  TaskGetCommandRouterAccessRequest: {
    package: 'modal.client',
    fields: {
      task_id: { number: 1, type: 'string' },
    },
  },
  TaskGetCommandRouterAccessResponse: {
    package: 'modal.client',
    fields: {
      jwt: { number: 1, type: 'string' },
      url: { number: 2, type: 'string' },
    },
  },
  TaskExecStartRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      exec_id: { number: 2, type: 'string' },
      command_args: { number: 3, type: 'string', label: 'repeated' },
      stdout_config: { number: 4, type: 'TaskExecStdoutConfig' },
      stderr_config: { number: 5, type: 'TaskExecStderrConfig' },
      timeout_secs: { number: 6, type: 'uint32', label: 'optional' },
      workdir: { number: 7, type: 'string', label: 'optional' },
      secret_ids: { number: 8, type: 'string', label: 'repeated' },
      pty_info: { number: 9, type: 'modal.client.PTYInfo', label: 'optional' },
      runtime_debug: { number: 10, type: 'bool' },
      container_id: { number: 11, type: 'string' },
      env: { number: 12, type: 'map<string,string>' },
      secret_sources: { number: 13, type: 'modal.client.SecretSource', label: 'repeated' },
    },
  },
  TaskExecStartResponse: {
    package: 'modal.task_command_router',
    fields: {},
  },
  PTYInfo: {
    package: 'modal.client',
    fields: {
      enabled: { number: 1, type: 'bool' },
      winsz_rows: { number: 2, type: 'uint32' },
      winsz_cols: { number: 3, type: 'uint32' },
      env_term: { number: 4, type: 'string' },
      env_colorterm: { number: 5, type: 'string' },
      env_term_program: { number: 6, type: 'string' },
      pty_type: { number: 7, type: 'PTYType' },
      no_terminate_on_idle_stdin: { number: 8, type: 'bool' },
    },
  },
  'PTYInfo.PTYType': {
    package: 'modal.client',
    enum: {
      PTY_TYPE_UNSPECIFIED: 0,
      PTY_TYPE_FUNCTION: 1,
      PTY_TYPE_SHELL: 2,
    },
  },
  TaskExecStdoutConfig: {
    package: 'modal.task_command_router',
    enum: {
      TASK_EXEC_STDOUT_CONFIG_DEVNULL: 0,
      TASK_EXEC_STDOUT_CONFIG_PIPE: 1,
    },
  },
  TaskExecStderrConfig: {
    package: 'modal.task_command_router',
    enum: {
      TASK_EXEC_STDERR_CONFIG_DEVNULL: 0,
      TASK_EXEC_STDERR_CONFIG_PIPE: 1,
      TASK_EXEC_STDERR_CONFIG_STDOUT: 2,
    },
  },
  TaskExecStdioReadRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      exec_id: { number: 2, type: 'string' },
      offset: { number: 3, type: 'uint64' },
      file_descriptor: { number: 4, type: 'TaskExecStdioFileDescriptor' },
    },
  },
  TaskExecStdioReadResponse: {
    package: 'modal.task_command_router',
    fields: {
      data: { number: 1, type: 'bytes' },
    },
  },
  TaskExecStdioFileDescriptor: {
    package: 'modal.task_command_router',
    enum: {
      TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT: 0,
      TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR: 1,
    },
  },
  TaskExecStdinWriteRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      exec_id: { number: 2, type: 'string' },
      offset: { number: 3, type: 'uint64' },
      data: { number: 4, type: 'bytes' },
      eof: { number: 5, type: 'bool' },
    },
  },
  TaskExecStdinWriteResponse: {
    package: 'modal.task_command_router',
    fields: {},
  },
  TaskExecWaitRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      exec_id: { number: 2, type: 'string' },
    },
  },
  TaskExecWaitResponse: {
    package: 'modal.task_command_router',
    fields: {
      code: { number: 1, type: 'int32', oneof: 'exit_status' },
      signal: { number: 2, type: 'int32', oneof: 'exit_status' },
    },
  },
  TaskExecPollRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      exec_id: { number: 2, type: 'string' },
    },
  },
  TaskExecPollResponse: {
    package: 'modal.task_command_router',
    fields: {
      code: { number: 1, type: 'int32', oneof: 'exit_status' },
      signal: { number: 2, type: 'int32', oneof: 'exit_status' },
    },
  },
  TaskSetNetworkAccessRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      network_access: { number: 2, type: 'modal.client.NetworkAccess' },
    },
  },
  TaskSetNetworkAccessResponse: {
    package: 'modal.task_command_router',
    fields: {},
  },
  RPCStatus: {
    package: 'modal.client',
    fields: {
      code: { number: 1, type: 'int32' },
      message: { number: 2, type: 'string' },
      details: { number: 3, type: 'google.protobuf.Any', label: 'repeated' },
    },
  },
  RPCRetryPolicy: {
    package: 'modal.client',
    fields: {
      retry_after_secs: { number: 1, type: 'float' },
    },
  },
  'GenericResult.GenericStatus': {
    package: 'modal.client',
    enum: {
      GENERIC_STATUS_UNSPECIFIED: 0,
      GENERIC_STATUS_SUCCESS: 1,
      GENERIC_STATUS_FAILURE: 2,
      GENERIC_STATUS_TERMINATED: 3,
      GENERIC_STATUS_TIMEOUT: 4,
      GENERIC_STATUS_INIT_FAILURE: 5,
      GENERIC_STATUS_INTERNAL_FAILURE: 6,
      GENERIC_STATUS_IDLE_TIMEOUT: 7,
      GENERIC_STATUS_MEMORY_MANAGER_EVICTION: 8,
      GENERIC_STATUS_MEMORY_THRASHING_EVICTION: 9,
      GENERIC_STATUS_KERNEL_OOM_KILL: 10,
    },
  },
  'NetworkAccess.NetworkAccessType': {
    package: 'modal.client',
    enum: {
      UNSPECIFIED: 0,
      OPEN: 1,
      BLOCKED: 2,
      ALLOWLIST: 3,
    },
  },
  ImageContextFile: {
    package: 'modal.client',
    fields: {
      filename: { number: 1, type: 'string' },
      data: { number: 2, type: 'bytes' },
    },
  },
  MountFile: {
    package: 'modal.client',
    fields: {
      filename: { number: 1, type: 'string' },
      sha256_hex: { number: 3, type: 'string' },
      size: { number: 4, type: 'uint64', label: 'optional' },
      mode: { number: 5, type: 'uint32', label: 'optional' },
    },
  },
  MountGetOrCreateRequest: {
    package: 'modal.client',
    fields: {
      deployment_name: { number: 1, type: 'string' },
      namespace: { number: 2, type: 'DeploymentNamespace' },
      environment_name: { number: 3, type: 'string' },
      object_creation_type: { number: 4, type: 'ObjectCreationType' },
      files: { number: 5, type: 'MountFile', label: 'repeated' },
      app_id: { number: 6, type: 'string' },
    },
  },
  MountGetOrCreateResponse: {
    package: 'modal.client',
    fields: {
      mount_id: { number: 1, type: 'string' },
      handle_metadata: { number: 2, type: 'MountHandleMetadata' },
    },
  },
  MountPutFileRequest: {
    package: 'modal.client',
    fields: {
      sha256_hex: { number: 2, type: 'string' },
      data: { number: 3, type: 'bytes', oneof: 'data_oneof' },
      data_blob_id: { number: 5, type: 'string', oneof: 'data_oneof' },
    },
  },
  MountPutFileResponse: {
    package: 'modal.client',
    fields: {
      exists: { number: 2, type: 'bool' },
    },
  },
  MountHandleMetadata: {
    package: 'modal.client',
    fields: {
      content_checksum_sha256_hex: { number: 1, type: 'string' },
    },
  },
  SandboxCreateV2Request: {
    package: 'modal.client',
    fields: {
      app_id: { number: 1, type: 'string' },
      definition: { number: 2, type: 'Sandbox' },
      tags: { number: 4, type: 'SandboxTag', label: 'repeated' },
      secret_sources: { number: 6, type: 'SecretSource', label: 'repeated' },
    },
  },
  SandboxCreateV2Response: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string' },
      task_id: { number: 3, type: 'string' },
      command_router_access: { number: 5, type: 'CommandRouterAccess' },
      sandbox_token: { number: 6, type: 'string' },
    },
  },
  CommandRouterAccess: {
    package: 'modal.client',
    fields: {
      jwt: { number: 1, type: 'string' },
      url: { number: 2, type: 'string' },
    },
  },
  SandboxGetCommandRouterAccessRequest: {
    package: 'modal.client',
    fields: {
      sandbox_id: { number: 1, type: 'string', oneof: 'target' },
      task_id: { number: 2, type: 'string', oneof: 'target' },
    },
  },
  SandboxGetCommandRouterAccessResponse: {
    package: 'modal.client',
    fields: {
      jwt: { number: 1, type: 'string' },
      url: { number: 2, type: 'string' },
    },
  },
  TaskSnapshotFilesystemRequest: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      snapshot_id: { number: 2, type: 'string' },
      ttl_seconds: { number: 3, type: 'int64', label: 'optional' },
      container_id: { number: 5, type: 'string' },
    },
  },
  TaskSnapshotFilesystemResponse: {
    package: 'modal.task_command_router',
    fields: {
      image_id: { number: 1, type: 'string' },
    },
  },
  ImageDeleteRequest: {
    package: 'modal.client',
    fields: {
      image_id: { number: 1, type: 'string' },
    },
  },
  Empty: {
    package: 'google.protobuf',
    fields: {},
  },
  SandboxStdioFileDescriptor: {
    package: 'modal.task_command_router',
    enum: {
      SANDBOX_STDIO_FILE_DESCRIPTOR_STDOUT: 0,
      SANDBOX_STDIO_FILE_DESCRIPTOR_STDERR: 1,
    },
  },
  SandboxStdioReadV2Request: {
    package: 'modal.task_command_router',
    fields: {
      task_id: { number: 1, type: 'string' },
      offset: { number: 2, type: 'uint64' },
      file_descriptor: { number: 3, type: 'SandboxStdioFileDescriptor' },
    },
  },
  SandboxStdioReadV2Response: {
    package: 'modal.task_command_router',
    fields: {
      data: { number: 1, type: 'bytes' },
      starting_offset: { number: 2, type: 'uint64' },
    },
  },
} as const satisfies Schema;
