import { CapabilityError, type ImageBuild } from '@berth/core';
import { baseImages, buildFailure, hashBuildContext, logTail, readDockerfile } from '@berth/core/backend-kit';
import { BACKEND } from './credentials.js';
import { planImage, type BuildRecipe, type ImagePlan } from './image.js';
import type { ModalBackendOptions } from './options.js';

/** The builder names each step 'Step 2/5 : RUN make', as Docker's legacy builder does. */
const STEP = /^Step \d+\/\d+ : (.*)$/;

/** A Dockerfile for Modal's builder: the base image's pull plan, and the commands after FROM. */
export interface DockerfilePlan {
  base: ImagePlan;
  recipe: BuildRecipe;
}

/** The Dockerfile's instructions, continuation lines joined, comments and blank lines dropped. */
export function instructions(dockerfile: string): string[] {
  return dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
}

/**
 * Modal's builder runs a Dockerfile's commands; COPY and ADD read the build context, which goes up
 * as a mount of its files the way Modal's SDK sends it (context-mount.ts). Multi-stage builds are
 * refused with a CapabilityError that says what to do instead: berth plans one base image, pulled
 * like any image (mirrors, Docker config credentials).
 */
export async function planDockerfile(build: ImageBuild, options: ModalBackendOptions, environmentId?: string): Promise<DockerfilePlan> {
  const ctx = { operation: 'build' as const, backend: BACKEND, ...(environmentId ? { environmentId } : {}) };
  const dockerfile = await readDockerfile(build, { backend: BACKEND });
  const lines = instructions(dockerfile);
  const refuse = (what: string) =>
    new CapabilityError({
      ...ctx,
      capability: 'imageBuild.multiStage',
      message: `the Modal backend builds one stage on one base image and cannot ${what} (${build.context}/${build.dockerfile}): build the earlier stages into a base image, push it, and start this Dockerfile FROM it`,
    });
  const froms = lines.filter((l) => /^FROM\s/i.test(l));
  if (froms.length !== 1 || /\sAS\s/i.test(froms[0] ?? '') || build.target) throw refuse('run a multi-stage build');
  const fromStage = lines.find((l) => /^COPY\s.*--from[= ]/i.test(l));
  if (fromStage) throw refuse(`copy from another stage or image ("${fromStage.slice(0, 80)}")`);
  const copies = lines.some((l) => /^(COPY|ADD)\s/i.test(l));
  const baseRef = baseImages(dockerfile, build.args)[0];
  if (!baseRef) throw refuse('find its FROM image');
  const base = await planImage(baseRef, undefined, options, environmentId);
  // ARGs before FROM only name the base image, which is resolved here.
  const afterFrom = lines.slice(lines.indexOf(froms[0]!) + 1);
  return {
    base,
    recipe: {
      commands: [`FROM ${base.ref.canonical}`, ...afterFrom],
      ...(Object.keys(build.args).length ? { buildArgs: { ...build.args } } : {}),
      ...(copies ? { context: { build, hash: await hashBuildContext(build) } } : {}),
      failure: (result, log) => {
        const step = [...log].reverse().find((l) => STEP.test(l));
        const pulling = step && /^FROM\s/i.test(STEP.exec(step)?.[1] ?? '');
        return buildFailure(result.exception?.trim() || String(result.status), {
          ...ctx,
          build,
          ...(step ? { step } : {}),
          logTail: logTail([...log]),
          ...(pulling ? { baseImage: baseRef } : {}),
          credentialsHint: "a base image in a private registry needs credentials in Docker's config",
        });
      },
    },
  };
}
