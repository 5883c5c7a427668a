package framework

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fixture builders return objects in namespace "default" with a single
// container and labels app=<name>; modifiers adjust them.

// DeploymentOption modifies a Deployment fixture.
type DeploymentOption func(*appsv1.Deployment)

// Deployment returns a Deployment called name with replicas pods.
func Deployment(name string, replicas int32, opts ...DeploymentOption) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
			Template: podTemplate(name),
		},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

// StatefulSetOption modifies a StatefulSet fixture.
type StatefulSetOption func(*appsv1.StatefulSet)

// StatefulSet returns a StatefulSet called name with replicas pods and
// service name <name> (the Service need not exist).
func StatefulSet(name string, replicas int32, opts ...StatefulSetOption) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels(name)},
			Template:            podTemplate(name),
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// JobOption modifies a Job fixture.
type JobOption func(*batchv1.Job)

// Job returns a Job called name that needs completions successful pods.
func Job(name string, completions int32, opts ...JobOption) *batchv1.Job {
	tpl := podTemplate(name)
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{
			Completions: &completions,
			Parallelism: &completions,
			Template:    tpl,
		},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

// InNamespace puts a Deployment fixture into ns.
func InNamespace(ns string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Namespace = ns }
}

func labels(name string) map[string]string { return map[string]string{"app": name} }

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels(name)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/e2e:1"}},
		},
	}
}

// DeploymentAvailable reports whether d has condition Available=True.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// JobComplete reports whether j has condition Complete=True.
func JobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
